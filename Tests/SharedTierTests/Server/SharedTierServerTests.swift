import Foundation
import ImageStoreTestSupport
import Testing
@testable import SharedTier

/// The tier's reads and writes against a real server.
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(3)))
struct SharedTierServerTests {
    private func makeTier(_ server: S3Server, clock: ManualClock, queueLimit: Int = 256) throws -> SharedTier {
        try SharedTier(configuration: .init(s3: server.configuration(), uploadQueueLimit: queueLimit, now: clock.source))
    }

    @Test func anUploadedEntryComesBackWithEveryFieldAndItsAbsoluteTimes() async throws {
        try await S3Server.with { server in
            let clock = ManualClock()
            let tier = try makeTier(server, clock: clock)
            let url = "https://origin.test/img/42.jpg?w=100&q=é"
            let entry = TestObjects.entry(url, now: clock.now, lifetime: 600)
            #expect(await tier.lookup(url) == .miss(.absent))
            #expect(await tier.upload(entry) == .stored)
            guard case var .hit(found) = await tier.lookup(url) else { Issue.record("no hit after the upload"); return }
            #expect(found.objectETag != nil)
            found.objectETag = nil
            #expect(found == entry)
            // Freshness comes from the absolute expiry, whoever reads it and whenever.
            clock.advance(by: 601)
            guard case let .hit(later) = await tier.lookup(url) else { Issue.record("no hit later"); return }
            #expect(!later.isFresh(at: clock.now))
            #expect(tier.statistics.hits == 2)
            #expect(tier.statistics.absent == 1)
            #expect(tier.statistics.uploadsStored == 1)
        }
    }

    /// Two hosts upload the same URL: one stores, the other loses the race without an error.
    @Test func twoHostsUploadingOneURLOneStoresTheOtherLosesTheRace() async throws {
        try await S3Server.with { server in
            let clock = ManualClock()
            let hostA = try makeTier(server, clock: clock)
            let hostB = try makeTier(server, clock: clock)
            let url = "https://origin.test/raced.jpg"
            async let a = hostA.upload(TestObjects.entry(url, now: clock.now))
            async let b = hostB.upload(TestObjects.entry(url, now: clock.now))
            let outcomes = await [a, b]
            #expect(outcomes.sorted { "\($0)" < "\($1)" } == [.lostRace, .stored])
            #expect(hostA.statistics.preconditionFailed + hostB.statistics.preconditionFailed == 1)
            #expect(hostA.statistics.errorCount + hostB.statistics.errorCount == 0)
        }
    }

    /// A 304 from the origin renews the shared entry in place: new expiry, same bytes. A host
    /// whose read predates a newer download (other bytes, so another ETag) loses its refresh
    /// (`x-amz-copy-source-if-match`) and so does its replace (`If-Match`).
    @Test func aRefreshRewritesTheMetadataInPlaceAndAStaleOneLoses() async throws {
        try await S3Server.with { server in
            let clock = ManualClock()
            let tier = try makeTier(server, clock: clock)
            let url = "https://origin.test/refreshed.jpg"
            #expect(await tier.upload(TestObjects.entry(url, now: clock.now, lifetime: 60)) == .stored)
            guard case let .hit(read) = await tier.lookup(url) else { Issue.record("no hit"); return }
            clock.advance(by: 120)
            var renewed = read
            renewed.expires = clock.now.addingTimeInterval(60)
            renewed.fetched = clock.now
            #expect(await tier.refreshMetadata(renewed) == .stored)
            guard case let .hit(after) = await tier.lookup(url) else { Issue.record("no hit after the refresh"); return }
            #expect(after.isFresh(at: clock.now))
            #expect(after.body == read.body)
            #expect(after.originETag == read.originETag)
            #expect(tier.statistics.refreshes == 1)

            // Another host downloads a newer version and replaces the one it read.
            let newer = TestObjects.entry(url, body: TestObjects.bytes(99), now: clock.now, originETag: "\"origin-v2\"")
            #expect(await tier.upload(newer, replacing: after.objectETag) == .stored)
            // `read` names the old bytes: its refresh and its replace both lose, and the newer stays.
            #expect(await tier.refreshMetadata(renewed) == .lostRace)
            #expect(await tier.upload(TestObjects.entry(url, now: clock.now), replacing: read.objectETag) == .lostRace)
            guard case let .hit(final) = await tier.lookup(url) else { Issue.record("no hit at the end"); return }
            #expect(final.body == newer.body)
            #expect(final.originETag == "\"origin-v2\"")
            #expect(tier.statistics.preconditionFailed == 2)
        }
    }

    @Test func queuedUploadsAllLandAndTheQueueDrains() async throws {
        try await S3Server.with { server in
            let clock = ManualClock()
            let tier = try makeTier(server, clock: clock)
            let urls = (0..<20).map { "https://origin.test/queued/\($0).jpg" }
            for (index, url) in urls.enumerated() {
                #expect(tier.enqueueUpload(TestObjects.entry(url, body: TestObjects.bytes(index), now: clock.now)))
            }
            await tier.waitForUploads()
            #expect(tier.statistics.queueDepth == 0)
            #expect(tier.statistics.uploadsStored == urls.count)
            for (index, url) in urls.enumerated() {
                guard case let .hit(entry) = await tier.lookup(url) else { Issue.record("\(url) is missing"); continue }
                #expect(entry.body == TestObjects.bytes(index))
            }
            let page = try await tier.client.list(prefix: tier.configuration.prefix)
            #expect(page.objects.count == urls.count)
            #expect(Set(page.objects.map(\.key)) == Set(urls.map(tier.key(for:))))
        }
    }
}
