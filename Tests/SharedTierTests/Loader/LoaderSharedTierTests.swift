import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing
@testable import SharedTier

/// The loader with a real shared tier between hosts: memory → local store → shared tier →
/// origin. Each host is its own store, clock and tier client; the server and origin are real.
// 10 minutes: the limit also counts the wait for one of `ServerSlots.limit` servers, which under the
// whole `swift test` (every server suite at once) took this suite past 3 minutes.
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(10)))
struct LoaderSharedTierTests {
    static let fixture = "photo-baseline.jpg"

    // MARK: - Order and freshness

    @Test func aSecondHostIsServedByTheTierAndTheOriginSeesOneRequest() async throws {
        try await withFleet { server, origin in
            let path = "/shared/one/\(Self.fixture)"
            try await origin.script(path, .image(Self.fixture, ["Cache-Control": "max-age=600"]))
            let (a, b) = (try LoaderHost(server), try LoaderHost(server))
            defer { try? a.close(); try? b.close() }
            let first = try await a.load(origin.url(path))
            #expect(first.source == .network)
            await a.tier.waitForUploads()
            #expect(a.tier.statistics.uploadsStored == 1)

            let second = try await b.load(origin.url(path))
            #expect(second.source == .shared)
            #expect(second.data == first.data)
            #expect(second.facts == first.facts)
            #expect(second.expiresAt == first.expiresAt)
            #expect([.memory, .disk].contains(try await b.load(origin.url(path)).source), "stored locally")
            #expect(try await origin.stats(path).requests == 1)
            #expect(b.loader.metrics.sharedTierHits == 1)
            #expect(b.loader.statistics.sharedTierHits == 1)
            #expect(b.loader.statistics.requests == 0)
            #expect(a.loader.metrics.sharedTierOffers == 1)
            #expect(a.loader.metrics.sharedTierMisses == 1)
        }
    }

    /// Freshness comes from the absolute expiry in the object: a host whose clock is later
    /// gets what is left of the lifetime, not a new one.
    @Test func anEntryNeverGainsLifeThroughTheTier() async throws {
        try await withFleet { server, origin in
            let path = "/shared/life/\(Self.fixture)"
            try await origin.script(path, .image(Self.fixture, ["Cache-Control": "max-age=600"]))
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            let a = try LoaderHost(server, clock: ManualClock(start))
            let b = try LoaderHost(server, clock: ManualClock(start.addingTimeInterval(500)))
            defer { try? a.close(); try? b.close() }
            let first = try await a.load(origin.url(path))
            await a.tier.waitForUploads()
            #expect(first.expiresAt == start.addingTimeInterval(600))

            let second = try await b.load(origin.url(path))
            #expect(second.source == .shared)
            #expect(second.expiresAt == start.addingTimeInterval(600), "100 s left, not 600 s from host b's now")
            b.clock.advance(by: 101)
            #expect(try await b.load(origin.url(path)).source == .network, "expired everywhere: the origin is asked")
            #expect(try await origin.stats(path).requests == 2)
        }
    }

    // MARK: - Revalidation

    /// An expired shared entry is revalidated with the ORIGIN's validators; the 304 renews it
    /// locally and rewrites the object's metadata in place, so a third host gets it fresh.
    @Test func a304RefreshesTheSharedMetadataWithTheOriginsValidators() async throws {
        try await withFleet { server, origin in
            let path = "/shared/revalidate/\(Self.fixture)"
            try await origin.script(path, .image(Self.fixture, ["Cache-Control": "max-age=60", "ETag": "\"origin-v1\""]))
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            let a = try LoaderHost(server, clock: ManualClock(start))
            let b = try LoaderHost(server, clock: ManualClock(start.addingTimeInterval(120)))
            let c = try LoaderHost(server, clock: ManualClock(start.addingTimeInterval(130)))
            defer { try? a.close(); try? b.close(); try? c.close() }
            _ = try await a.load(origin.url(path))
            await a.tier.waitForUploads()
            guard case let .hit(before) = await a.tier.lookup(try a.store.normalizedURL(origin.url(path))) else {
                Issue.record("the upload is not in the tier")
                return
            }

            let revalidated = try await b.load(origin.url(path))
            #expect(revalidated.source == .revalidated)
            #expect(revalidated.expiresAt == start.addingTimeInterval(180))
            let stats = try await origin.stats(path)
            #expect(stats.not_modified == 1)
            #expect(stats.last_headers["If-None-Match"] == "\"origin-v1\"")
            #expect(stats.last_headers["If-None-Match"] != before.objectETag, "never the tier's own ETag")
            await b.tier.waitForUploads()
            #expect(b.tier.statistics.refreshes == 1)
            #expect(b.loader.metrics.sharedTierRefreshes == 1)
            #expect([.memory, .disk].contains(try await b.load(origin.url(path)).source))

            let third = try await c.load(origin.url(path))
            #expect(third.source == .shared, "the refreshed metadata is fresh at host c's clock")
            #expect(third.expiresAt == start.addingTimeInterval(180))
            #expect(try await origin.stats(path).requests == 2)
        }
    }

    // MARK: - Races between hosts

    /// Two hosts download one URL before either uploads: the first create stores, the second
    /// gets 412, counted as a lost race and not as an error.
    @Test func twoHostsCreatingOneEntryOneStoresTheOtherGets412() async throws {
        try await withFleet { server, origin in
            let path = "/shared/create-race/\(Self.fixture)"
            try await origin.script(path, .image(Self.fixture, ["Cache-Control": "max-age=600"]))
            let a = try LoaderHost(server, wrap: { HeldOffers($0) })
            let b = try LoaderHost(server, wrap: { HeldOffers($0) })
            defer { try? a.close(); try? b.close() }
            #expect(try await a.load(origin.url(path)).source == .network)
            #expect(try await b.load(origin.url(path)).source == .network)
            #expect(await (a.loader.sharedTier as! HeldOffers).release() == [.stored])
            #expect(await (b.loader.sharedTier as! HeldOffers).release() == [.lostRace])
            #expect(b.tier.statistics.preconditionFailed == 1)
            #expect(a.tier.statistics.errorCount + b.tier.statistics.errorCount == 0)
        }
    }

    /// Two hosts both find the entry expired and the origin changed, and download different
    /// new bytes: the first replace (If-Match on the version read) stores, the second gets 412,
    /// so a host with an older read never overwrites a newer object.
    @Test func twoHostsReplacingOneExpiredEntryOneWinsTheOtherGets412() async throws {
        try await withFleet { server, origin in
            let path = "/shared/replace-race/\(Self.fixture)"
            try await origin.script(path, .image(Self.fixture, ["Cache-Control": "max-age=60", "ETag": "\"v1\""]))
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            let a = try LoaderHost(server, clock: ManualClock(start))
            _ = try await a.load(origin.url(path))
            await a.tier.waitForUploads()
            try await origin.script(path, .image("photo-progressive.jpg", ["Cache-Control": "max-age=60", "ETag": "\"v2\""]),
                                    .image("gray-restart.jpg", ["Cache-Control": "max-age=60", "ETag": "\"v3\""]))
            let later = start.addingTimeInterval(120)
            let b = try LoaderHost(server, clock: ManualClock(later), wrap: { HeldOffers($0) })
            let c = try LoaderHost(server, clock: ManualClock(later), wrap: { HeldOffers($0) })
            defer { try? a.close(); try? b.close(); try? c.close() }
            let fromB = try await b.load(origin.url(path))
            let fromC = try await c.load(origin.url(path))
            #expect(fromB.source == .network)
            #expect(fromC.source == .network)
            #expect(fromB.data != fromC.data)
            #expect(await (b.loader.sharedTier as! HeldOffers).release() == [.stored])
            #expect(await (c.loader.sharedTier as! HeldOffers).release() == [.lostRace])
            #expect(c.tier.statistics.preconditionFailed == 1)
            #expect(b.tier.statistics.errorCount + c.tier.statistics.errorCount == 0)
            guard case let .hit(now) = await a.tier.lookup(try a.store.normalizedURL(origin.url(path))) else {
                Issue.record("the entry is gone from the tier")
                return
            }
            #expect(now.body == fromB.data, "the winner's bytes stand")
            #expect(now.originETag == "\"v2\"")
        }
    }
}
