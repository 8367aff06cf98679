import Foundation
import ImageStore
import ImageStoreTestSupport
import Synchronization
import Testing

/// A store faked in memory, as a user would fake one in their own tests: the loader needs
/// only `ImageLoaderStore`. It counts what the loader asks of it.
final class FakeLoaderStore: ImageLoaderStore {
    struct Calls: Sendable {
        var validations = 0
        var stores: [Durability] = []
        var renewals = 0
    }
    let configuration: ImageStore.Configuration
    private let entries = Mutex<[String: StoredImage]>([:])
    private let calls = Mutex(Calls())

    init(clock: ManualClock) {
        var configuration = ImageStore.Configuration()
        configuration.clock = clock.source
        self.configuration = configuration
    }

    var recorded: Calls { calls.withLock { $0 } }

    func normalizedURL(_ url: String) throws(ImageStoreError) -> String { url }

    func image(for url: String, allowingStale: Bool) throws(ImageStoreError) -> StoredImage? {
        guard let entry = entries.withLock({ $0[url] }) else { return nil }
        let stale = entry.info.expiresAt.map { $0 <= configuration.clock() } ?? false
        guard allowingStale || !stale else { return nil }
        return StoredImage(data: entry.data, info: entry.info, isStale: stale, source: .memory)
    }

    func validate(_ data: Data, for url: String) throws(ImageStoreError) -> ValidatedImage {
        calls.withLock { $0.validations += 1 }
        do { return ValidatedImage(data: data, facts: try ImageValidator().validate(data)) } catch {
            throw .invalidImage(url: url, reason: error.description)
        }
    }

    func store(_ image: ValidatedImage, for url: String, expiry: Expiry, validators: CacheValidators,
               durability: Durability) async throws -> EntryInfo {
        calls.withLock { $0.stores.append(durability) }
        let now = configuration.clock()
        let expiresAt: Date? = switch expiry {
        case .never, .storeDefault: nil
        case let .after(duration): now.addingTimeInterval(Double(duration.components.seconds))
        case let .at(date): date
        }
        let info = EntryInfo(url: url, byteCount: image.data.count, createdAt: now, expiresAt: expiresAt,
                             facts: image.facts, validators: validators)
        entries.withLock { $0[url] = StoredImage(data: image.data, info: info) }
        return info
    }

    func renew(_ url: String, expiry: Expiry, validators: CacheValidators, durability: Durability) async throws -> EntryInfo? {
        calls.withLock { $0.renewals += 1 }
        return entries.withLock { $0[url]?.info }
    }

    func forget(_ url: String, durability: Durability) async throws {
        _ = entries.withLock { $0.removeValue(forKey: url) }
    }
}

@Suite struct LoaderStoreProtocolTests {
    @Test func aLoaderRunsOverAFakeStoreValidatingEachDownloadOnceAndStoringItBatched() async throws {
        let origin = try TestOrigin()
        defer { origin.stop() }
        let clock = ManualClock()
        let store = FakeLoaderStore(clock: clock)
        var configuration = ImageLoader.Configuration()
        configuration.downloadTimeout = .seconds(60)
        let loader = try ImageLoader(store: store, configuration: configuration)
        try await origin.script("/a.png", .image("gradient-rgb.png"))
        let first = try await loader.image(for: origin.url("/a.png"))
        #expect(first.source == .network)
        #expect(store.recorded.validations == 1, "one validation per download")
        #expect(store.recorded.stores == [.batched(within: Durability.defaultBatchWindow)], "the loader's durability")
        let second = try await loader.image(for: URL(string: origin.url("/a.png"))!)
        #expect(second.source == .memory)
        #expect(second.data == first.data)
        #expect(store.recorded.validations == 1, "a stored, validated entry is not validated again")
    }

    @Test func theLoadersDefaultDurabilityIsBatched() {
        #expect(ImageLoader.Configuration().durability == .batched(within: Durability.defaultBatchWindow))
    }

    @Test func aCancelledLoadThrowsCancellationError() async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script("/slow.png", TestOrigin.Response(fixture: "gradient-rgb.png", body_delay: 1))
            let url = origin.url("/slow.png")
            let task = Task { try await loader.image(for: url) }
            try await waitUntil { try await origin.stats("/slow.png").requests == 1 }
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
        }
    }
}
