import Foundation
import ImageStoreTestSupport
import Testing
@testable import SharedTier

/// The tier against a real server that stops, freezes or refuses us: every lookup is a miss
/// (a frozen server's a `timedOut` one: the tier's own deadline ended it), never a throw; the breaker opens after `threshold` outages, skips the
/// tier while open, and closes after one probe once the server is back.
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(3)))
struct SharedTierOutageTests {
    static let threshold = 3
    static let coolDown: TimeInterval = 30
    /// Shorter than the suite's usual timeouts, longer than the defaults (200 ms, 1 s) so the
    /// probe to a server just restarted on a loaded machine is not cut off.
    static let connectTimeout = Duration.seconds(1)
    static let requestTimeout = Duration.seconds(3)

    private func makeTier(_ server: S3Server, clock: ManualClock,
                          credentials: S3Credentials = S3Server.credentials) throws -> SharedTier {
        try SharedTier(configuration: .init(
            s3: server.configuration(credentials: credentials, connectTimeout: Self.connectTimeout,
                                     requestTimeout: Self.requestTimeout), breakerThreshold: Self.threshold,
            breakerCoolDown: .seconds(Self.coolDown), now: clock.source))
    }

    /// Stores one entry and checks it is a hit, so the outage is the only thing that changes.
    private func seed(_ tier: SharedTier, _ url: String, clock: ManualClock, server: S3Server) async throws {
        let seeder = try SharedTier(configuration: .init(s3: server.configuration(), now: clock.source))
        #expect(await seeder.upload(TestObjects.entry(url, now: clock.now)) == .stored)
        guard case .hit = await tier.lookup(url) else { Issue.record("the seeded entry is not a hit"); return }
    }

    /// Lookups until the breaker opens: each a failed miss of `kind`, then skipped ones.
    private func expectBreakerOpens(_ tier: SharedTier, _ url: String, kind: String) async {
        for attempt in 1...Self.threshold {
            // The deadline is shown by the kind (`timedOut` for a frozen server: the watchdog
            // fired, nothing waited for the server); wall-clock time is not asserted, since
            // under the full suite a lookup waits for a free concurrency thread too.
            let result = await tier.lookup(url)
            guard case let .miss(.failed(error)) = result else {
                Issue.record("lookup \(attempt) during the outage gave \(result)")
                return
            }
            #expect(error.kind == kind, "lookup \(attempt): \(error)")
        }
        guard case .open = tier.statistics.breaker else {
            Issue.record("the breaker is \(tier.statistics.breaker) after \(Self.threshold) outages")
            return
        }
        #expect(await tier.lookup(url) == .miss(.skipped))
        #expect(await tier.upload(TestObjects.entry("u:skipped", now: Date())) == .skipped)
        #expect(tier.statistics.skipped == 2)
        #expect(tier.statistics.errors[kind] == Self.threshold)
    }

    /// After the cool-down, one probe: a hit closes the breaker.
    private func expectBreakerCloses(_ tier: SharedTier, _ url: String, clock: ManualClock) async {
        #expect(await tier.lookup(url) == .miss(.skipped), "still cooling down")
        clock.advance(by: Self.coolDown + 1)
        guard case .hit = await tier.lookup(url) else {
            Issue.record("the probe after the server came back was not a hit: \(tier.statistics)")
            return
        }
        #expect(tier.statistics.breaker == .closed(failures: 0))
    }

    // MARK: - Outages

    @Test func aKilledServerIsAMissAndTheBreakerOpensThenClosesWhenItIsBack() async throws {
        try await S3Server.with { server in
            let clock = ManualClock()
            let tier = try makeTier(server, clock: clock)
            try await seed(tier, "https://origin.test/killed.jpg", clock: clock, server: server)
            try await server.kill()
            await expectBreakerOpens(tier, "https://origin.test/killed.jpg", kind: "unreachable")
            try await server.restart()
            await expectBreakerCloses(tier, "https://origin.test/killed.jpg", clock: clock)
        }
    }

    @Test func aFrozenServerTimesOutAsAMissAndTheBreakerClosesWhenItThaws() async throws {
        try await S3Server.with { server in
            let clock = ManualClock()
            let tier = try makeTier(server, clock: clock)
            try await seed(tier, "https://origin.test/frozen.jpg", clock: clock, server: server)
            try server.freeze()
            await expectBreakerOpens(tier, "https://origin.test/frozen.jpg", kind: "timedOut")
            try server.signal(SIGCONT)
            await expectBreakerCloses(tier, "https://origin.test/frozen.jpg", clock: clock)
        }
    }

    /// A tier answering 403 to every request (wrong credentials) is an outage like any
    /// other: misses, then the breaker skips it.
    @Test func aTierAnswering403IsAMissAndOpensTheBreaker() async throws {
        try await S3Server.with { server in
            let clock = ManualClock()
            let wrong = S3Credentials(accessKeyID: S3Server.credentials.accessKeyID, secretAccessKey: "wrong-secret")
            let tier = try makeTier(server, clock: clock, credentials: wrong)
            await expectBreakerOpens(tier, "https://origin.test/403.jpg", kind: "badCredentials")
        }
    }

    // MARK: - Integrity through the tier

    @Test func aCorruptObjectIsAMissAndDoesNotOpenTheBreaker() async throws {
        try await S3Server.with { server in
            let clock = ManualClock()
            let tier = try makeTier(server, clock: clock)
            let url = "https://origin.test/corrupt.jpg"
            let entry = TestObjects.entry(url, now: clock.now)
            var damaged = entry.body
            damaged[damaged.count / 2] ^= 0x01
            _ = try await tier.client.put(tier.key(for: url), body: damaged, metadata: try ObjectLayout.metadata(of: entry),
                                          contentType: "image/jpeg", condition: .create,
                                          recordedSHA256: Digest.hex(Digest.sha256(entry.body)))
            for _ in 0..<(Self.threshold + 1) {
                guard case .miss(.failed(.corruptBody)) = await tier.lookup(url) else {
                    Issue.record("a corrupt object was not a corrupt miss")
                    return
                }
            }
            #expect(tier.statistics.errors["corruptBody"] == Self.threshold + 1)
            #expect(tier.statistics.breaker == .closed(failures: 0))
            #expect(tier.statistics.hits == 0)
        }
    }
}
