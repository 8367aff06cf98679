import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// TTLs from the origin's caching headers, with the manual clock (no test sleeps).
@Suite struct LoaderFreshnessTests {
    // MARK: - Lifetimes

    @Test func maxAgeSetsTheExpiry() async throws {
        try await withLoader { loader, origin, clock in
            try await origin.script("/m.png", .image("shapes.png", ["Cache-Control": "public, max-age=600"]))
            let url = origin.url("/m.png")
            let image = try await loader.load(url)
            #expect(image.source == .network)
            #expect(image.expiresAt == clock.now.addingTimeInterval(600))
            clock.advance(by: 599)
            #expect(try await loader.load(url).source == .disk)
            clock.advance(by: 2)
            #expect(try await loader.load(url).source == .network)
            #expect(try await origin.stats("/m.png").requests == 2)
        }
    }

    @Test func expiresCountsFromTheResponseDate() async throws {
        try await withLoader { loader, origin, clock in
            try await origin.script("/e.png", .image("shapes.png", [
                "Date": "Sun, 06 Nov 1994 08:49:37 GMT", "Expires": "Sun, 06 Nov 1994 09:49:37 GMT",
            ]))
            let image = try await loader.load(origin.url("/e.png"))
            #expect(image.expiresAt == clock.now.addingTimeInterval(3600))
        }
    }

    @Test func maxAgeWinsOverExpiresAndAgeIsSubtracted() async throws {
        try await withLoader { loader, origin, clock in
            try await origin.script("/a.png", .image("shapes.png", [
                "Cache-Control": "max-age=1000", "Age": "400", "Expires": "Sun, 06 Nov 1994 09:49:37 GMT",
            ]))
            #expect(try await loader.load(origin.url("/a.png")).expiresAt == clock.now.addingTimeInterval(600))
        }
    }

    @Test func noCachingHeadersGetTheDefaultTTL() async throws {
        try await withLoader({ $0.defaultExpiry = .after(.seconds(1234)) }) { loader, origin, clock in
            let image = try await loader.load(origin.url("/d/shapes.png"))
            #expect(image.expiresAt == clock.now.addingTimeInterval(1234))
        }
    }

    @Test(arguments: [
        ("max-age=1", 60.0), ("max-age=0", 60), ("max-age=999999999", 86_400), ("max-age=oops", 60),
        ("no-cache", 0), ("private, max-age=300", 300), ("s-maxage=100, max-age=300", 300),
    ])
    func lifetimesAreClampedToTheConfiguredBounds(cacheControl: String, ttl: Double) async throws {
        try await withLoader({ $0.minLifetime = .seconds(60); $0.maxLifetime = .seconds(86_400) }) { loader, origin, clock in
            try await origin.script("/c.png", .image("shapes.png", ["Cache-Control": cacheControl]))
            #expect(try await loader.load(origin.url("/c.png")).expiresAt == clock.now.addingTimeInterval(ttl))
        }
    }

    @Test func aSharedCacheHonoursSMaxageAndSkipsPrivate() async throws {
        try await withLoader({ $0.isSharedCache = true }) { loader, origin, clock in
            try await origin.script("/s.png", .image("shapes.png", ["Cache-Control": "s-maxage=100, max-age=300"]))
            try await origin.script("/p.png", .image("shapes.png", ["Cache-Control": "private, max-age=300"]))
            #expect(try await loader.load(origin.url("/s.png")).expiresAt == clock.now.addingTimeInterval(100))
            #expect(try await !loader.load(origin.url("/p.png")).isStored)
        }
    }

    @Test func invalidExpiresMeansAlreadyExpired() async throws {
        try await withLoader({ $0.minLifetime = .zero }) { loader, origin, clock in
            try await origin.script("/x.png", .image("shapes.png", ["Expires": "0"]))
            #expect(try await loader.load(origin.url("/x.png")).expiresAt == clock.now)
        }
    }

    // MARK: - no-store

    @Test func noStoreIsServedButNotStored() async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script("/n.png", .image("gray-alpha.png", ["Cache-Control": "no-store"]))
            let url = origin.url("/n.png")
            let image = try await loader.load(url)
            #expect(image.source == .network)
            #expect(!image.isStored)
            #expect(image.data == (try Fixtures.image("gray-alpha.png")))
            #expect(try loader.store.get(url, allowingStale: true) == nil)
            #expect(try await loader.load(url).source == .network)
            #expect(try await origin.stats("/n.png").requests == 2)
        }
    }
}
