import Foundation
@testable import LMDB
import Synchronization
import Testing

/// `ResizeGate` is the lock every transaction takes shared and the data-file swap takes
/// exclusively. What it must never do: let an exclusive holder overlap a shared one, let two
/// exclusive holders overlap, or keep a shared holder waiting once no exclusive turn is wanted.
@Suite struct ResizeGateTests {
    /// What the holders saw: how many shared and exclusive holders were inside at once.
    private final class Occupancy: Sendable {
        let shared = Atomic<Int>(0)
        let exclusive = Atomic<Int>(0)
        let overlaps = Atomic<Int>(0)
        let sharedTurns = Atomic<Int>(0)
    }

    /// One counter that escaping thread bodies can share.
    private final class Counter: Sendable {
        let value: Atomic<Int>
        init(_ initial: Int = 0) { value = Atomic(initial) }
        var current: Int { value.load(ordering: .sequentiallyConsistent) }
    }

    @Test func anExclusiveTurnNeverOverlapsAnyOtherHolder() {
        let gate = ResizeGate(), seen = Occupancy()
        let readerCount = 4, exclusiveTurns = 300
        let stop = Counter()
        let readers = DispatchGroup(), exclusives = DispatchGroup()
        for _ in 0..<readerCount {
            readers.enter()
            Thread {
                defer { readers.leave() }
                while stop.current == 0 {
                    gate.shared {
                        seen.shared.add(1, ordering: .relaxed)
                        if seen.exclusive.load(ordering: .relaxed) != 0 { seen.overlaps.add(1, ordering: .relaxed) }
                        seen.shared.subtract(1, ordering: .relaxed)
                    }
                    seen.sharedTurns.add(1, ordering: .relaxed)
                }
            }.start()
        }
        let before = seen.sharedTurns.load(ordering: .relaxed)
        // Two threads take turns at the exclusive side, so exclusive turns contend too.
        for _ in 0..<2 {
            exclusives.enter()
            Thread {
                defer { exclusives.leave() }
                for _ in 0..<(exclusiveTurns / 2) {
                    gate.exclusive {
                        if seen.exclusive.add(1, ordering: .relaxed).newValue != 1 { seen.overlaps.add(1, ordering: .relaxed) }
                        if seen.shared.load(ordering: .relaxed) != 0 { seen.overlaps.add(1, ordering: .relaxed) }
                        usleep(50)
                        if seen.shared.load(ordering: .relaxed) != 0 { seen.overlaps.add(1, ordering: .relaxed) }
                        seen.exclusive.subtract(1, ordering: .relaxed)
                    }
                    // Turns come apart (as compactions do): back-to-back turns would starve readers.
                    usleep(200)
                }
            }.start()
        }
        #expect(exclusives.wait(timeout: .now() + 120) == .success, "every exclusive turn ran beside the readers")
        let during = seen.sharedTurns.load(ordering: .relaxed) - before
        stop.value.store(1, ordering: .sequentiallyConsistent)
        #expect(readers.wait(timeout: .now() + 60) == .success, "every reader finished")
        let overlaps = seen.overlaps.load(ordering: .relaxed)
        #expect(overlaps == 0, "no holder saw an exclusive one beside it")
        #expect(during > 0, "the readers made progress between exclusive turns")
    }

    /// A shared holder that backed off for an exclusive turn enters as soon as that turn ends.
    @Test func aReaderHeldBackByAnExclusiveTurnEntersWhenItEnds() {
        let gate = ResizeGate()
        let inside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        let readerRan = Counter()
        Thread {
            gate.exclusive {
                inside.signal()
                _ = release.wait(timeout: .now() + 30)
            }
        }.start()
        #expect(inside.wait(timeout: .now() + 30) == .success)
        Thread {
            gate.shared { readerRan.value.store(1, ordering: .sequentiallyConsistent) }
            entered.signal()
        }.start()
        #expect(entered.wait(timeout: .now() + 0.2) == .timedOut, "the reader waits while the exclusive turn runs")
        #expect(readerRan.current == 0)
        release.signal()
        #expect(entered.wait(timeout: .now() + 30) == .success, "the reader entered once the turn ended")
        #expect(readerRan.current == 1)
    }

    /// The exclusive side waits for every shared holder already inside.
    @Test func anExclusiveTurnWaitsForTheSharedHoldersInside() {
        let gate = ResizeGate()
        let inside = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let exclusiveRan = DispatchSemaphore(value: 0)
        let readersInside = Counter()
        for _ in 0..<3 {
            Thread {
                gate.shared {
                    readersInside.value.add(1, ordering: .sequentiallyConsistent)
                    inside.signal()
                    _ = release.wait(timeout: .now() + 30)
                    readersInside.value.subtract(1, ordering: .sequentiallyConsistent)
                }
            }.start()
        }
        for _ in 0..<3 { #expect(inside.wait(timeout: .now() + 30) == .success) }
        let insideAtItsStart = Counter(-1)
        Thread {
            gate.exclusive { insideAtItsStart.value.store(readersInside.current, ordering: .relaxed) }
            exclusiveRan.signal()
        }.start()
        #expect(exclusiveRan.wait(timeout: .now() + 0.2) == .timedOut, "the exclusive turn waits for the readers")
        for _ in 0..<3 { release.signal() }
        #expect(exclusiveRan.wait(timeout: .now() + 30) == .success)
        #expect(insideAtItsStart.current == 0, "it ran only after the readers left")
    }
}
