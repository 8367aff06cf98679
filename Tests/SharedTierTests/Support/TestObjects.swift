import Foundation
import Testing
import ImageStoreTestSupport
@testable import SharedTier

/// Entries and bytes for the tier tests.
enum TestObjects {
    /// A real JPEG from the repository's fixtures.
    static let jpeg: Data = try! Fixtures.image("photo-baseline.jpg")

    /// An entry for `url` with `body`, fresh for `lifetime` seconds from `now`.
    static func entry(_ url: String, body: Data = jpeg, now: Date, lifetime: TimeInterval = 3600,
                      originETag: String? = "\"origin-v1\"") -> SharedEntry {
        SharedEntry(url: url, body: body, format: "jpeg", width: 64, height: 48, originETag: originETag,
                    originLastModified: "Tue, 01 Dec 2026 10:00:00 GMT", expires: now.addingTimeInterval(lifetime),
                    fetched: now)
    }

    /// Some distinct bytes (not an image: the S3 client does not care).
    static func bytes(_ seed: Int, count: Int = 4096) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &* 7) })
    }
}

/// The error `body` throws, or nil when it succeeds. An error of another type is a test failure.
func failure(of body: () async throws -> Void) async -> SharedTierError? {
    do {
        try await body()
        return nil
    } catch let error as SharedTierError {
        return error
    } catch {
        Issue.record("expected a SharedTierError, got \(error)")
        return nil
    }
}
