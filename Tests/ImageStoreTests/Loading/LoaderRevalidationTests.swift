import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Expired entries are revalidated with conditional requests; a 304 renews them.
@Suite struct LoaderRevalidationTests {
    @Test func expiredEntryIsRevalidatedWithIfNoneMatchAnd304() async throws {
        try await withLoader { loader, origin, clock in
            try await origin.script("/r.jpg", .image("photo-progressive.jpg", ["Cache-Control": "max-age=100", "ETag": "\"v1\""]))
            let url = origin.url("/r.jpg")
            let first = try await loader.load(url)
            #expect(first.source == .network)
            #expect(try loader.store.get(url)?.info.validators.etag == "\"v1\"")
            clock.advance(by: 150)
            let second = try await loader.load(url)
            #expect(second.source == .revalidated)
            #expect(second.data == first.data)
            #expect(second.expiresAt == clock.now.addingTimeInterval(100))
            let stats = try await origin.stats("/r.jpg")
            #expect(stats.requests == 2)
            #expect(stats.conditional == 1)
            #expect(stats.not_modified == 1, "the origin answered 304 once")
            #expect(stats.last_headers["If-None-Match"] == "\"v1\"")
            #expect(loader.statistics.notModified == 1)
            // Renewed: fresh again without a request.
            #expect(try await loader.load(url).source == .disk)
            #expect(try await origin.stats("/r.jpg").requests == 2)
        }
    }

    @Test func lastModifiedIsSentAsIfModifiedSince() async throws {
        try await withLoader { loader, origin, clock in
            let modified = "Wed, 21 Oct 2015 07:28:00 GMT"
            try await origin.script("/lm.png", .image("palette-16.png", ["Cache-Control": "max-age=100", "Last-Modified": modified]))
            let url = origin.url("/lm.png")
            _ = try await loader.load(url)
            clock.advance(by: 101)
            #expect(try await loader.load(url).source == .revalidated)
            let stats = try await origin.stats("/lm.png")
            #expect(stats.last_headers["If-Modified-Since"] == modified)
            #expect(stats.not_modified == 1)
        }
    }

    @Test func aChangedImageReplacesTheEntry() async throws {
        try await withLoader { loader, origin, clock in
            try await origin.script(
                "/changes", .image("shapes.png", ["Cache-Control": "max-age=100", "ETag": "\"v1\""]),
                .image("gradient-rgb.png", ["Cache-Control": "max-age=200", "ETag": "\"v2\""]))
            let url = origin.url("/changes")
            #expect(try await loader.load(url).facts.width == (try ImageValidator().validate(Fixtures.image("shapes.png"))).width)
            clock.advance(by: 101)
            let second = try await loader.load(url)
            #expect(second.source == .network)
            #expect(second.data == (try Fixtures.image("gradient-rgb.png")))
            #expect(try loader.store.get(url)?.info.validators.etag == "\"v2\"")
            let stats = try await origin.stats("/changes")
            #expect(stats.conditional == 1)
            #expect(stats.not_modified == 0)
        }
    }

    @Test func noCacheRevalidatesOnEveryLoad() async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script("/nc.png", .image("shapes.png", ["Cache-Control": "no-cache", "ETag": "\"n\""]))
            let url = origin.url("/nc.png")
            #expect(try await loader.load(url).source == .network)
            #expect(try await loader.load(url).source == .revalidated)
            #expect(try await loader.load(url).source == .revalidated)
            #expect(try await origin.stats("/nc.png").not_modified == 2)
        }
    }
}
