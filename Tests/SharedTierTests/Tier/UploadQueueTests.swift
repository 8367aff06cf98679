import Foundation
import Locking
import Testing
@testable import SharedTier

@Suite struct UploadQueueTests {
    /// A gate jobs wait on until the test opens it.
    final class Gate: Sendable {
        private let state = LockedValue<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state -> Bool in
                    if state.open { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if open { continuation.resume() }
            }
        }
        func open() {
            let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.open = true
                defer { state.waiters = [] }
                return state.waiters
            }
            waiters.forEach { $0.resume() }
        }
    }

    @Test func aFullQueueRefusesAndEveryQueuedJobRuns() async {
        let queue = UploadQueue(limit: 3, concurrency: 1)
        let gate = Gate()
        let ran = LockedValue(0)
        let started = LockedValue(false)
        #expect(queue.enqueue { started.withLock { $0 = true }; await gate.wait(); ran.withLock { $0 += 1 } })
        // Wait until the worker has taken the first job, so exactly `limit` more can wait.
        while !started.withLock({ $0 }) { await Task.yield() }
        for _ in 0..<3 { #expect(queue.enqueue { ran.withLock { $0 += 1 } }) }
        #expect(!queue.enqueue { ran.withLock { $0 += 100 } }, "the fourth waiting job is refused")
        #expect(queue.depth == 4)
        gate.open()
        await queue.waitUntilIdle()
        #expect(ran.withLock { $0 } == 4)
        #expect(queue.depth == 0)
    }

    @Test func runsAtMostConcurrencyJobsAtOnce() async {
        let queue = UploadQueue(limit: 100, concurrency: 2)
        let running = LockedValue((now: 0, most: 0))
        for _ in 0..<40 {
            _ = queue.enqueue {
                running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                await Task.yield()
                running.withLock { $0.now -= 1 }
            }
        }
        await queue.waitUntilIdle()
        #expect(running.withLock { $0.most } <= 2)
        #expect(running.withLock { $0.now } == 0)
    }

    @Test func waitingOnAnIdleQueueReturnsAtOnce() async {
        await UploadQueue(limit: 1, concurrency: 1).waitUntilIdle()
    }
}
