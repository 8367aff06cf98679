import Foundation
import ImageStore
import SharedTier

/// The README's "Shared tier" example, compiled here; `ReadmeExampleTests` checks that the
/// README's lines appear in this file, in order.
enum SharedTierReadmeExample {
    static func example(
        normalisedURL: String, serve: (Data) -> Void, revalidate: (SharedEntry) -> Void,
        downloadFromOrigin: () async throws -> SharedEntry
    ) async throws {
        let tier = try SharedTier(configuration: .init(s3: S3Configuration(bucketURL: "http://127.0.0.1:8333/imgstore")))
        switch await tier.lookup(normalisedURL) {              // never throws
        case .hit(let entry) where entry.isFresh(at: .now): serve(entry.body)
        case .hit(let expired): revalidate(expired)            // with expired.originETag, then tier.refreshMetadata(…)
        case .miss: tier.enqueueUpload(try await downloadFromOrigin())  // best effort, in the background
        }
    }
}

/// The README's "Running a fleet" example, compiled here (see above).
enum FleetReadmeExample {
    static func example(store: ImageStore) async throws {
        let tier = try SharedTier(configuration: .init(s3: S3Configuration(bucketURL: "http://127.0.0.1:8333/imgstore")))
        let loader = try ImageLoader(store: store, sharedTier: tier)
        let image = try await loader.image(for: "https://cdn.example.com/img/42.jpg")
        print(image.source)   // .shared: another host downloaded it; validated and now stored here too
    }
}
