import Locking

/// A bounded queue of background jobs, run `concurrency` at a time by tasks it starts on
/// demand (none while idle). A full queue refuses the job rather than wait: uploads to the
/// shared tier are best effort and never hold up the caller.
final class UploadQueue: Sendable {
    typealias Job = @Sendable () async -> Void

    private struct State {
        var pending: [Job] = []
        var head = 0
        var running = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []

        var waiting: Int { pending.count - head }
    }

    private let limit: Int
    private let concurrency: Int
    private let state = LockedValue(State())

    init(limit: Int, concurrency: Int) {
        self.limit = limit
        self.concurrency = concurrency
    }

    /// Jobs waiting or running.
    var depth: Int { state.withLock { $0.waiting + $0.running } }

    /// Queues `job`; false when `limit` jobs are already waiting.
    func enqueue(_ job: @escaping Job) -> Bool {
        let (queued, startWorker) = state.withLock { state -> (Bool, Bool) in
            guard state.waiting < limit else { return (false, false) }
            state.pending.append(job)
            guard state.running < concurrency else { return (true, false) }
            state.running += 1
            return (true, true)
        }
        if startWorker { Task(priority: .utility) { await self.work() } }
        return queued
    }

    /// Returns once no job is waiting or running.
    func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state -> Bool in
                if state.waiting == 0 && state.running == 0 { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }

    private func work() async {
        while let job = next() { await job() }
    }

    /// The next job, or nil (and this worker gone) when none is waiting.
    private func next() -> Job? {
        let (job, waiters) = state.withLock { state -> (Job?, [CheckedContinuation<Void, Never>]) in
            if state.head < state.pending.count {
                let job = state.pending[state.head]
                state.head += 1
                // Compact once the consumed part dominates, so the array does not grow forever.
                if state.head > 64 && state.head * 2 > state.pending.count {
                    state.pending.removeFirst(state.head)
                    state.head = 0
                }
                return (job, [])
            }
            state.running -= 1
            // Invariant: a worker leaves only when nothing waits, so the count never goes negative.
            assert(state.running >= 0, "UploadQueue: more workers left than started")
            guard state.running == 0 else { return (nil, []) }
            let waiters = state.idleWaiters
            state.idleWaiters = []
            return (nil, waiters)
        }
        for waiter in waiters { waiter.resume() }
        return job
    }
}
