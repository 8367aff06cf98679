import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Only whole, valid 2xx images are stored; everything else fails and stores nothing.
@Suite struct LoaderValidationTests {
    // MARK: - Bad bodies

    @Test func corruptBodyIsRejectedAndNotStored() async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script("/corrupt.png", TestOrigin.Response(fixture: "gradient-rgb.png", corrupt: true))
            let url = origin.url("/corrupt.png")
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            guard case .invalidImage = error else { Issue.record("got \(String(describing: error))"); return }
            #expect(try loader.store.get(url, allowingStale: true) == nil)
        }
    }

    @Test(arguments: ["photo-baseline.jpg", "gradient-rgb.png"])
    func truncatedImageIsRejectedAndNotStored(fixture: String) async throws {
        try await withLoader { loader, origin, _ in
            // Valid HTTP (Content-Length matches), but the image stops halfway.
            let size = try Fixtures.image(fixture).count
            try await origin.script("/cut", TestOrigin.Response(fixture: fixture, cut: size / 2))
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(origin.url("/cut")) }
            guard case .invalidImage = error else { Issue.record("got \(String(describing: error))"); return }
            #expect(try loader.store.get(origin.url("/cut"), allowingStale: true) == nil)
        }
    }

    @Test func connectionClosedBeforeContentLengthIsALengthMismatch() async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script("/short.jpg", TestOrigin.Response(fixture: "photo-baseline.jpg", truncate: 1000))
            let url = origin.url("/short.jpg")
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(error == .lengthMismatch(url: url, expected: 7660, received: 1000))
            #expect(try loader.store.get(url, allowingStale: true) == nil)
        }
    }

    @Test func shorterContentLengthThanTheImageIsRejected() async throws {
        try await withLoader { loader, origin, _ in
            // The client reads what Content-Length announces: an image missing its tail.
            try await origin.script("/under.png", TestOrigin.Response(fixture: "gradient-rgb.png", length_delta: -100))
            let url = origin.url("/under.png")
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            guard case .invalidImage = error else { Issue.record("got \(String(describing: error))"); return }
            #expect(try loader.store.get(url, allowingStale: true) == nil)
        }
    }

    @Test func emptyBodyIsRejected() async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script("/empty", TestOrigin.Response(status: 200, body_size: 0))
            let url = origin.url("/empty")
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(error == .emptyBody(url: url))
        }
    }

    // MARK: - Status codes

    @Test(arguments: [404, 410, 206, 500, 503])
    func nonSuccessStatusIsNotStored(status: Int) async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script("/status", TestOrigin.Response(status: status, fixture: "shapes.png"))
            let url = origin.url("/status")
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(error == .httpStatus(url: url, status: status))
            #expect(try loader.store.get(url, allowingStale: true) == nil)
        }
    }

    @Test func invalidURLsAreRejectedWithoutARequest() async throws {
        try await withLoader { loader, _, _ in
            for url in ["", "not a url", "ftp://example.com/a.png", "file:///etc/passwd", "http://"] {
                let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
                guard case .invalidURL = error else { Issue.record("\(url): got \(String(describing: error))"); continue }
            }
            #expect(loader.statistics.requests == 0)
        }
    }

    // MARK: - Size limit

    @Test func announcedBodyOverMaxEntryBytesIsAbortedBeforeReading() async throws {
        try await withLoader(maxEntryBytes: 64 << 10) { loader, origin, _ in
            // The body starts late enough that the loader has seen the length and hung up first,
            // even on a loaded machine (the test waits only as long as the abort takes).
            let total = 32 << 20
            try await origin.script("/huge-announced", TestOrigin.Response(body_size: total, body_delay: 5))
            let url = origin.url("/huge-announced")
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(error == .responseTooLarge(url: url, limit: 64 << 10, byteCount: total))
            #expect(try loader.store.get(url, allowingStale: true) == nil)
            try await waitUntil { let s = try await origin.stats("/huge-announced"); return s.aborted || s.bytes_sent == total }
            #expect(try await origin.stats("/huge-announced").aborted, "the origin saw the connection closed early")
        }
    }

    @Test func streamedBodyOverMaxEntryBytesIsAbortedWhileReceiving() async throws {
        try await withLoader(maxEntryBytes: 64 << 10) { loader, origin, _ in
            // No Content-Length: the limit can only be seen while the bytes arrive. Paced like a
            // network (16 MiB at 64 KiB per 50 ms, 13 s in all): FoundationNetworking reads ahead
            // of its delegate, so over loopback the whole body could arrive before the delegate
            // sees it. The slow pace leaves a loaded machine seconds to hang up; the test waits
            // only as long as that takes.
            let total = 16 << 20
            try await origin.script(
                "/huge-streamed", TestOrigin.Response(body_size: total, no_length: true, chunk_size: 64 << 10, chunk_delay: 0.05))
            let url = origin.url("/huge-streamed")
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(error == .responseTooLarge(url: url, limit: 64 << 10, byteCount: nil))
            try await waitUntil { let s = try await origin.stats("/huge-streamed"); return s.aborted || s.bytes_sent == total }
            let stats = try await origin.stats("/huge-streamed")
            #expect(stats.aborted)
            #expect(stats.bytes_sent < total / 2)
        }
    }
}
