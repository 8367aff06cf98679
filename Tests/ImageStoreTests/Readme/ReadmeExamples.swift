import Foundation
import ImageStore

// The README's Swift examples, verbatim inside functions that give them the names they use.
// `ReadmeExampleTests` checks that every block of README.md is here, line by line, and runs the
// first one; the compiler checks them all.

/// README "Usage".
func readmeUsage(downloadedBytes: Data, imagesDirectory: String, serve: (Data, String?) -> Void) async throws {
    func respond(with data: Data, type: String?) { serve(data, type) }
    let store = try await ImageStore.open(path: imagesDirectory)  // e.g. /var/cache/my-service/images
    let url = "https://cdn.example.com/img/42.jpg"
    let info = try await store.async.put(downloadedBytes, for: url, expiry: .after(.seconds(86_400)))
    print(info.facts!.width, info.facts!.height)           // decoded from the header on put
    if let image = try store.image(for: url) {             // reads never wait: no async form
        respond(with: image.data, type: image.info.facts?.format.mimeType)  // checksum-verified
    }
    await store.async.close()
}

/// README "Configuration defaults".
func readmeConfiguration() -> ImageStore.Configuration {
    var configuration = ImageStore.Configuration()
    configuration.defaultExpiry = .after(.seconds(3 * 86_400))   // what .storeDefault means
    configuration.sweepPeriod = .seconds(30)                      // nil: sweep only on demand
    configuration.durability = .batched(within: .milliseconds(50))
    return configuration
}

/// README "Loading images" (compiled, not run: it goes to the network).
func readmeLoading(store: ImageStore, urlsOnTheNextPage: [String]) async throws {
    let loader = try ImageLoader(store: store)
    let image = try await loader.image(for: "https://cdn.example.com/img/42.jpg")
    print(image.source, image.facts.width, image.facts.height)   // memory / disk / network / revalidated / stale
    loader.prefetch(urlsOnTheNextPage)                             // fills the store in the background
}
