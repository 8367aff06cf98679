import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Everything a loader test needs: an origin, a store with validation on and a manual clock,
/// and a loader over them. The server is killed and the store checked, closed and deleted
/// however `body` ends.
func withLoader<R>(
    _ configure: (inout ImageLoader.Configuration) -> Void = { _ in },
    maxEntryBytes: Int? = nil,
    _ body: (ImageLoader, TestOrigin, ManualClock) async throws -> R
) async throws -> R {
    let origin = try TestOrigin()
    defer { origin.stop() }
    let directory = makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let clock = ManualClock()
    var storeConfiguration = makeConfiguration(validation: .rejectInvalid, clock: clock)
    storeConfiguration.durability = .none
    if let maxEntryBytes { storeConfiguration.maxEntryBytes = maxEntryBytes }
    let store = try ImageStore(path: directory + "/store", configuration: storeConfiguration)
    defer { store.close() }
    var configuration = ImageLoader.Configuration()
    configuration.downloadTimeout = .seconds(60)  // generous: the machine may be loaded
    configure(&configuration)
    let loader = try ImageLoader(store: store, configuration: configuration)
    let result = try await body(loader, origin, clock)
    try checkConsistency(of: store)
    return result
}

/// The error `body` throws, as an `ImageLoaderError` (a test failure when it does not throw).
func loaderError(_ body: () async throws(ImageLoaderError) -> LoadedImage,
                 sourceLocation: SourceLocation = #_sourceLocation) async -> ImageLoaderError? {
    do {
        let image = try await body()
        Issue.record("expected an error, loaded \(image.data.count) bytes from \(image.source)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}
