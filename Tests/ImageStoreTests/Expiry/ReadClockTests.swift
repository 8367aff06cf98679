import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Testing

/// The read path's clock: the system clock read directly, and an injected clock always honoured.
@Suite struct ReadClockTests {
    @Test func theDirectSystemClockReadsWhatDateReads() {
        for _ in 0..<1_000 {
            let before = ImageStore.milliseconds(Date())
            let direct = ReadClock.systemMilliseconds()
            let after = ImageStore.milliseconds(Date())
            #expect(before <= direct && direct <= after, "\(before) ≤ \(direct) ≤ \(after)")
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
}
