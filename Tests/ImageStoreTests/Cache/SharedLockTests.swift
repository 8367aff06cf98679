import Foundation
import ImageStoreTestSupport
import Locking
import Synchronization
import Testing

/// `SharedLock`, the memory tier's fill gate: fills hold the shared side together, and an
/// invalidation's bump holds the exclusive side alone. Dedicated threads (`startThreads`), so
/// that they run at once whatever else the test run keeps busy.
@Suite struct SharedLockTests {
    private final class Counters: Sendable {
        let sharedHolders = Atomic<Int>(0), exclusiveHolders = Atomic<Int>(0), violations = Atomic<Int>(0)
        let sharedTurns = Atomic<Int>(0), exclusiveTurns = Atomic<Int>(0), ready = Atomic<Int>(0), met = Atomic<Int>(0)
    }

    /// Two threads inside the shared side at once: each waits, inside it, for the other to be
    /// inside too. A lock that excluded them would leave the second outside, and the first's
    /// bounded wait would time out.
    @Test func twoHoldersOfTheSharedSideRunTogether() {
        let lock = SharedLock(), counters = Counters()
        let inside = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
        startThreads(2) { index in
            lock.shared {
                inside[index].signal()
                if inside[1 - index].wait(timeout: .now() + 10) == .success { counters.met.add(1, ordering: .relaxed) }
            }
        }.wait()
        #expect(counters.met.load(ordering: .relaxed) == 2)
    }

    /// Four threads, started together, take either side at random for 300 ms: no shared holder
    /// ever sees an exclusive one, and an exclusive holder never sees anyone else.
    @Test func theExclusiveSideExcludesEveryoneElse() {
        let lock = SharedLock(), counters = Counters()
        startThreads(4) { _ in
            // Every thread waits for the others, so that their turns overlap in time.
            counters.ready.add(1, ordering: .relaxed)
            while counters.ready.load(ordering: .relaxed) < 4 { sched_yield() }
            let deadline = ContinuousClock.now + .milliseconds(300)
            var rng = SystemRandomNumberGenerator()
            while ContinuousClock.now < deadline {
                if Int.random(in: 0..<8, using: &rng) == 0 {
                    lock.exclusive {
                        counters.exclusiveTurns.add(1, ordering: .relaxed)
                        if counters.exclusiveHolders.add(1, ordering: .relaxed).newValue != 1 {
                            counters.violations.add(1, ordering: .relaxed)
                        }
                        // Held a while, looking, so that an overlap would be seen.
                        for _ in 0..<100 where counters.sharedHolders.load(ordering: .relaxed) != 0 {
                            counters.violations.add(1, ordering: .relaxed)
                        }
                        counters.exclusiveHolders.subtract(1, ordering: .relaxed)
                    }
                } else {
                    lock.shared {
                        counters.sharedTurns.add(1, ordering: .relaxed)
                        counters.sharedHolders.add(1, ordering: .relaxed)
                        for _ in 0..<20 where counters.exclusiveHolders.load(ordering: .relaxed) != 0 {
                            counters.violations.add(1, ordering: .relaxed)
                        }
                        counters.sharedHolders.subtract(1, ordering: .relaxed)
                    }
                }
            }
        }.wait()
        #expect(counters.violations.load(ordering: .relaxed) == 0)
        #expect(counters.exclusiveTurns.load(ordering: .relaxed) > 0 && counters.sharedTurns.load(ordering: .relaxed) > 0)
    }
}
