import Foundation
import ImageStoreTestSupport
import Testing
@testable import SharedTier

@Suite struct CircuitBreakerTests {
    private func makeBreaker(threshold: Int = 3, clock: ManualClock) -> CircuitBreaker {
        CircuitBreaker(threshold: threshold, coolDown: .seconds(10), now: clock.source)
    }

    @Test func opensAfterThresholdConsecutiveFailuresOnly() {
        let clock = ManualClock()
        let breaker = makeBreaker(clock: clock)
        breaker.failed(); breaker.failed()
        breaker.succeeded()  // a success in between resets the count
        breaker.failed(); breaker.failed()
        #expect(breaker.current == .closed(failures: 2))
        #expect(breaker.admit())
        breaker.failed()
        #expect(breaker.current == .open(until: clock.now.addingTimeInterval(10)))
        #expect(!breaker.admit())
    }

    @Test func afterTheCoolDownOneProbeGoesThroughAndItsOutcomeDecides() {
        let clock = ManualClock()
        let breaker = makeBreaker(threshold: 1, clock: clock)
        breaker.failed()
        clock.advance(by: 9.9)
        #expect(!breaker.admit())
        clock.advance(by: 0.2)
        #expect(breaker.admit(), "the probe")
        #expect(breaker.current == .halfOpen)
        #expect(!breaker.admit(), "only one probe at a time")
        breaker.failed()
        #expect(breaker.current == .open(until: clock.now.addingTimeInterval(10)), "a failed probe opens it again")
        clock.advance(by: 10)
        #expect(breaker.admit())
        breaker.succeeded()
        #expect(breaker.current == .closed(failures: 0))
        #expect(breaker.admit() && breaker.admit())
    }

    @Test func aLateFailureDoesNotExtendTheCoolDown() {
        let clock = ManualClock()
        let breaker = makeBreaker(threshold: 1, clock: clock)
        breaker.failed()
        let opened = breaker.current
        clock.advance(by: 5)
        breaker.failed()  // a request admitted before it opened, answering late
        #expect(breaker.current == opened)
    }
}
