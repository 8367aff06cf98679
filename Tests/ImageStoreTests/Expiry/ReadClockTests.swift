import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Testing

/// The read path's clock: the system clock read directly, the coarse clock only where it cannot
/// change a decision, and an injected clock always honoured.
@Suite struct ReadClockTests {
    /// Within a millisecond: `Date` keeps seconds since 2001 in a `Double` (a tenth of a
    /// microsecond apart today), so a read a fraction of a microsecond before a millisecond's
    /// end can truncate to the next one. A CI run saw 1796496326721 ≤ 1796496326720 ≤ …721.
    @Test func theDirectSystemClockReadsWhatDateReads() {
        for _ in 0..<1_000 {
            let before = ImageStore.milliseconds(Date())
            let direct = ReadClock.systemMilliseconds()
            let after = ImageStore.milliseconds(Date())
            #expect(before - 1 <= direct && direct <= after + 1, "\(before) ≤ \(direct) ≤ \(after), within 1 ms")
        }
    }

    @Test func anInjectedClockIsWhatAReadUses() {
        var configuration = ImageStore.Configuration()
        #expect(configuration.usesSystemClock)
        configuration.clock = { Date(timeIntervalSince1970: 1_000) }
        #expect(!configuration.usesSystemClock)
        var time = ReadClock(configuration)
        #expect(time.now() == 1_000_000)
    }

    /// The coarse clock never runs ahead of the precise one (`ReadClock.isBefore`'s invariant).
    @Test func theCoarseClockIsNeverAheadOfThePreciseOne() {
        let configuration = ImageStore.Configuration()
        for _ in 0..<10_000 {
            var time = ReadClock(configuration)
            let coarse = time.notAfterNow()
            #expect(coarse <= ReadClock.systemMilliseconds())
        }
    }

    /// A deadline more than `coarseMargin` away is decided without the precise clock; nearer,
    /// the answer is the precise clock's.
    @Test func aDeadlineIsDecidedAsThePreciseClockWouldDecideIt() {
        let configuration = ImageStore.Configuration()
        var time = ReadClock(configuration)
        let farAhead = time.isBefore(ReadClock.systemMilliseconds() + 2 * ReadClock.coarseMargin)
        #expect(farAhead)
        #expect(!time.hasReadPreciseClock, "a deadline two margins away needs no precise read")
        var near = ReadClock(configuration)
        let nearAhead = near.isBefore(ReadClock.systemMilliseconds() + ReadClock.coarseMargin / 2)
        #expect(nearAhead && near.hasReadPreciseClock, "half a margin away is decided by the precise clock")
        for offset in -20...20 {
            let before = ReadClock.systemMilliseconds()
            var time = ReadClock(configuration)
            let deadline = before + Int64(offset)
            let isBefore = time.isBefore(deadline)
            let after = ReadClock.systemMilliseconds()
            if isBefore { #expect(deadline > before, "\(deadline) judged after a time ≥ \(before)") }
            if !isBefore { #expect(deadline <= after, "\(deadline) judged not after a time ≤ \(after)") }
            #expect(time.hasReadPreciseClock)
            #expect(isBefore == (deadline > time.now()))
        }
        var injected = configuration
        injected.clock = { Date(timeIntervalSince1970: 1_000) }
        var fixed = ReadClock(injected)
        let (justAfter, atNow, notAfterNow) = (fixed.isBefore(1_000_001), fixed.isBefore(1_000_000), fixed.notAfterNow())
        #expect(justAfter && !atNow && notAfterNow == 1_000_000)
    }

    /// A memory hit is never served once its expiry has passed, read in a tight loop across
    /// the deadline with the system clock: near a deadline the precise clock decides.
    @Test func aMemoryHitIsNeverServedAfterItsExpiry() throws {
        let configuration = makeConfiguration()
        #expect(configuration.usesSystemClock)
        try withTemporaryDirectory { directory throws in
            let store = try ImageStore(path: directory, configuration: configuration)
            defer { store.close() }
            let image = Data(repeating: 7, count: 1_000)
            var rounds = 0
            for round in 0..<20 where rounds < 5 {
                let url = "https://x.test/expiring/\(round)"
                let expiresAt = ReadClock.systemMilliseconds() + 200
                try store.put(image, for: url, expiry: .at(ImageStore.date(expiresAt)))
                // A put slower than the lifetime (a loaded disk) leaves nothing to read: another round.
                guard ReadClock.systemMilliseconds() < expiresAt - 50 else { continue }
                rounds += 1
                var hits = 0
                let giveUp = Date() + 5
                while Date() < giveUp {
                    let before = ReadClock.systemMilliseconds()
                    guard try store.image(for: url) != nil else { break }
                    hits += 1
                    guard before < expiresAt else {
                        Issue.record("served \(before - expiresAt) ms past its expiry")
                        break
                    }
                }
                #expect(hits > 0, "read before it expired")
                #expect(try store.image(for: url) == nil, "expired at last")
            }
            #expect(rounds == 5, "five rounds whose put returned well before the deadline")
            #expect(try store.statistics().memoryHits > 0)
        }
    }
}
