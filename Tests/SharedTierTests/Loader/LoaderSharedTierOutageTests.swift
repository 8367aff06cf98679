import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing
@testable import SharedTier

/// Failure is a miss, through the loader: a tier that is killed, frozen, refusing us, or
/// holding a damaged object never fails a load. Every load is served by the origin (within
/// the tier's timeouts: a frozen tier's miss is `timedOut`, the tier's own deadline), the
/// breaker opens and then closes, and nothing the tier gave wrongly is stored locally.
// 10 minutes: the limit also counts the wait for one of `ServerSlots.limit` servers, which under the
// whole `swift test` (every server suite at once) took this suite past 3 minutes.
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(10)))
struct LoaderSharedTierOutageTests {
    static let threshold = 3
    static let fixture = "photo-baseline.jpg"

    /// A host whose tier has short timeouts (longer than the defaults: a loaded machine) and
    /// a breaker that opens after `threshold` outages.
    private func makeHost(_ server: S3Server, credentials: S3Credentials = S3Server.credentials,
                          bucket: String = S3Server.bucket) throws -> LoaderHost {
        try LoaderHost(server, s3: server.configuration(credentials: credentials, bucket: bucket, connectTimeout: .seconds(1),
                                                        requestTimeout: .seconds(3)),
                       breakerThreshold: Self.threshold)
    }

    /// `threshold` + 2 loads of new URLs during the outage: each served by the origin; the
    /// first `threshold` are misses of `kind`, then the breaker is open and skips the tier.
    private func expectLoadsGoOnWhileTheBreakerOpens(_ host: LoaderHost, _ origin: TestOrigin, kind: String,
                                                     tag: String) async throws {
        for index in 0..<(Self.threshold + 2) {
            let image = try await host.load(origin.url("/outage/\(tag)/\(index)/\(Self.fixture)"))
            #expect(image.source == .network, "load \(index) during the outage")
        }
        let statistics = host.tier.statistics
        // Lookups and the uploads of what the origin gave both fail until the breaker opens.
        #expect((statistics.errors[kind] ?? 0) >= Self.threshold, "\(statistics.errors)")
        #expect(statistics.errorCount == statistics.errors[kind], "only \(kind): \(statistics.errors)")
        #expect(statistics.skipped >= 2)
        guard case .open = statistics.breaker else {
            Issue.record("the breaker is \(statistics.breaker) after \(Self.threshold) outages")
            return
        }
        #expect(host.loader.metrics.sharedTierMisses == Self.threshold + 2)
    }

    /// After the cool-down the next load probes the tier; an answer (here: absent) closes it.
    private func expectBreakerCloses(_ host: LoaderHost, _ origin: TestOrigin, tag: String) async throws {
        host.clock.advance(by: 31)
        #expect(try await host.load(origin.url("/outage/\(tag)/after/\(Self.fixture)")).source == .network)
        #expect(host.tier.statistics.breaker == .closed(failures: 0))
    }

    @Test func aKilledTierFailsNoLoadAndTheBreakerOpensThenCloses() async throws {
        try await withFleet { server, origin in
            let host = try makeHost(server)
            defer { try? host.close() }
            try await server.kill()
            try await expectLoadsGoOnWhileTheBreakerOpens(host, origin, kind: "unreachable", tag: "killed")
            try await server.restart()
            try await expectBreakerCloses(host, origin, tag: "killed")
        }
    }

    @Test func aFrozenTierTimesOutAsAMissAndTheBreakerClosesWhenItThaws() async throws {
        try await withFleet { server, origin in
            let host = try makeHost(server)
            defer { try? host.close() }
            try server.freeze()
            do {
                try await expectLoadsGoOnWhileTheBreakerOpens(host, origin, kind: "timedOut", tag: "frozen")
            } catch {
                try? server.signal(SIGCONT)
                throw error
            }
            try server.signal(SIGCONT)
            try await expectBreakerCloses(host, origin, tag: "frozen")
        }
    }

    @Test func aTierAnswering403FailsNoLoadAndOpensTheBreaker() async throws {
        try await withFleet { server, origin in
            let wrong = S3Credentials(accessKeyID: S3Server.credentials.accessKeyID, secretAccessKey: "wrong-secret")
            let host = try makeHost(server, credentials: wrong)
            defer { try? host.close() }
            try await expectLoadsGoOnWhileTheBreakerOpens(host, origin, kind: "badCredentials", tag: "403")
        }
    }

    // MARK: - Nothing wrong is stored locally

    /// A host with bad credentials, or pointed at a bucket that does not exist, gets nothing
    /// from the tier although it holds the entry: the origin's bytes are what it stores.
    @Test(arguments: ["badCredentials", "unknownBucket"])
    func aMisconfiguredTierIsAMissAndTheOriginServes(_ kind: String) async throws {
        try await withFleet { server, origin in
            let path = "/misconfigured/\(kind)/\(Self.fixture)"
            try await origin.script(path, .image(Self.fixture, ["Cache-Control": "max-age=600"]))
            let seeder = try LoaderHost(server)
            defer { try? seeder.close() }
            _ = try await seeder.load(origin.url(path))
            await seeder.tier.waitForUploads()
            let host = kind == "badCredentials"
                ? try makeHost(server, credentials: S3Credentials(accessKeyID: "nobody", secretAccessKey: "nothing"))
                : try makeHost(server, bucket: "no-such-bucket")
            defer { try? host.close() }
            let image = try await host.load(origin.url(path))
            #expect(image.source == .network)
            await host.tier.waitForUploads()  // its upload of the origin's copy fails the same way
            let errors = host.tier.statistics.errors
            #expect((errors[kind] ?? 0) >= 1 && host.tier.statistics.errorCount == errors[kind], "\(errors)")
            #expect(host.tier.statistics.hits == 0)
            #expect(try await origin.stats(path).requests == 2)
        }
    }

    /// An object whose body was changed underneath (its checksum no longer matches) is a miss;
    /// the damaged bytes are never stored locally.
    @Test func aCorruptedObjectIsAMissAndNeverStoredLocally() async throws {
        try await withFleet { server, origin in
            let path = "/corrupt/\(Self.fixture)"
            try await origin.script(path, .image(Self.fixture, ["Cache-Control": "max-age=600"]))
            let seeder = try makeHost(server)
            let host = try makeHost(server)
            defer { try? seeder.close(); try? host.close() }
            let original = try await seeder.load(origin.url(path))
            await seeder.tier.waitForUploads()
            let url = try seeder.store.normalizedURL(origin.url(path))
            guard case let .hit(entry) = await seeder.tier.lookup(url) else {
                Issue.record("the upload is not in the tier")
                return
            }
            var damaged = entry.body
            damaged[damaged.count / 2] ^= 0x01
            _ = try await seeder.tier.client.put(seeder.tier.key(for: url), body: damaged, metadata: try ObjectLayout.metadata(of: entry),
                                                 contentType: "image/jpeg", condition: .unconditional,
                                                 recordedSHA256: Digest.hex(Digest.sha256(entry.body)))
            let image = try await host.load(origin.url(path))
            #expect(image.source == .network)
            #expect(host.tier.statistics.errors["corruptBody"] == 1)
            #expect(try host.store.image(for: url, allowingStale: true)?.data == original.data)
        }
    }

    /// An object that passes the tier's checks but is not a valid image (a host with another
    /// validator, a bug) is refused by this host's validator, and never stored.
    @Test func anInvalidImageInTheTierIsRefusedAndNeverStoredLocally() async throws {
        try await withFleet { server, origin in
            let path = "/invalid/\(Self.fixture)"
            try await origin.script(path, .image(Self.fixture, ["Cache-Control": "max-age=600"]))
            let host = try makeHost(server)
            defer { try? host.close() }
            let url = try host.store.normalizedURL(origin.url(path))
            let garbage = TestObjects.bytes(7)
            let entry = SharedEntry(url: url, body: garbage, format: "jpeg", width: 64, height: 48,
                                    expires: host.clock.now.addingTimeInterval(600), fetched: host.clock.now)
            #expect(await host.tier.upload(entry) == .stored)
            let image = try await host.load(origin.url(path))
            #expect(image.source == .network)
            #expect(host.loader.metrics.sharedTierInvalid == 1)
            #expect(try host.store.image(for: url, allowingStale: true)?.data != garbage)
        }
    }
}
