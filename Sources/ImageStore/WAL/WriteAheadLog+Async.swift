import Foundation

/// Appending from Swift concurrency: the task suspends instead of blocking its thread.
///
/// A task that must wait (for room under back-pressure, or for its record to be written or
/// synced) parks a continuation in `State.suspended` and gives its thread back. It never leads
/// a batch itself: the log's leader thread (`imgstore.wal-leader`, owned by the log) writes for
/// suspended tasks, and every state change that can satisfy a wait (a batch written, memory
/// released by the applier, a failure, the close) resumes the continuations it satisfies.
/// Synchronous callers keep leading on their own threads; both kinds share one group commit.
extension WriteAheadLog {
    /// What a suspended task waits for.
    enum Wait {
        /// Back-pressure: room for a record of this memory cost (or a reason to throw).
        case room(cost: Int)
        /// The record with this sequence number written to the file (or the log failed).
        case written(UInt64)
        /// The record with this sequence number on stable storage (or the log failed).
        case synced(UInt64)
    }

    /// How a suspended task's wait ended.
    enum WaitOutcome {
        /// The task was cancelled first.
        case cancelled
        /// The wait needs no more waiting: room, or a reason to throw (a failure, the close);
        /// the task looks under the lock which.
        case answered
        /// The record it waited for is written or synced as it waited for: nothing is left to
        /// look at, so the task returns without taking the lock again.
        case reached
    }

    /// Appends `entry` as `append(_:durability:publish:)` does, suspending the calling task
    /// instead of blocking its thread.
    ///
    /// Cancellation: a task cancelled while it waits for room throws `CancellationError` and
    /// nothing was queued (`publish` was not called). A task cancelled after its record was
    /// queued (while it waits for the write or the sync) throws `CancellationError` at once,
    /// but the record stays queued and is written and synced as usual: it may become durable.
    /// - Throws: `CancellationError`, or the `ImageStoreError`s of `append`.
    @discardableResult
    func appendAsync(_ entry: LogEntry, durability: Durability, publish: (UInt64) -> Void) async throws -> UInt64 {
        let parts = try Self.payloadParts(of: entry)
        var sequence: UInt64?
        while sequence == nil {
            try Task.checkCancellation()
            sequence = try withLock { () throws(ImageStoreError) -> UInt64? in
                guard try hasRoom(for: entry.memoryCost) else { return nil }
                return enqueue(entry, parts: parts, durability: durability, publish: publish)
            }
            if sequence == nil { try await suspend(until: .room(cost: entry.memoryCost)) }
        }
        let queued = sequence!
        switch durability {
        case .background, .storeDefault:
            // Invariant: the store resolves `.storeDefault` before anything reaches the log.
            assert(durability != .storeDefault)
            return queued
        case .batched: if try await suspend(until: .written(queued)) == .reached { return queued }
        case .sync: if try await suspend(until: .synced(queued)) == .reached { return queued }
        }
        try withLock { () throws(ImageStoreError) in
            taskRechecks.wrappingAdd(1, ordering: .relaxed)
            let reached = if case .sync = durability { state.syncedSequence } else { state.writtenSequence }
            if reached < queued, let failure = state.failure { throw map(failure) }
        }
        return queued
    }

    /// Suspends the task until `wait` is satisfied (or cannot be any more: a failure, the
    /// close); returns at once when it already is.
    /// - Returns: `.reached` or `.answered` (see `WaitOutcome`), never `.cancelled`.
    /// - Throws: `CancellationError` when the task is cancelled first.
    @discardableResult
    private func suspend(until wait: Wait) async throws -> WaitOutcome {
        let id = withLock { state.suspended.reserveID() }
        let ended = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WaitOutcome, Never>) in
                let answer: WaitOutcome? = withLock {
                    if state.suspended.wasCancelledEarly(id) { return .cancelled }
                    if isSatisfied(wait) { return outcome(of: wait) }
                    state.suspended.park(id, wait: wait, continuation: continuation)
                    // The leader thread may have work now; nobody else waits for a park.
                    if state.leaderThreadOnBell { ringLeaderBell() } else { condition.broadcast() }
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            withLock { state.suspended.cancel(id) }?.resume(returning: .cancelled)
        }
        if ended == .cancelled { throw CancellationError() }
        return ended
    }

    /// How a satisfied `wait` ended: `.reached` when its record got where it waited for,
    /// `.answered` otherwise. Called with the lock held.
    private func outcome(of wait: Wait) -> WaitOutcome {
        switch wait {
        case .room: .answered
        case let .written(sequence): state.writtenSequence >= sequence ? .reached : .answered
        case let .synced(sequence): state.syncedSequence >= sequence ? .reached : .answered
        }
    }

    /// Whether `wait` needs no more waiting. Called with the lock held.
    private func isSatisfied(_ wait: Wait) -> Bool {
        switch wait {
        case let .room(cost):
            // A throw is an answer too: the task retries its append, which throws it.
            do { return try hasRoom(for: cost) } catch { return true }
        case let .written(sequence): return state.writtenSequence >= sequence || state.failure != nil
        case let .synced(sequence): return state.syncedSequence >= sequence || state.failure != nil
        }
    }

    /// Wakes every thread waiting on the condition and every writer whose record is done
    /// (`wakeSatisfiedWriters`), and resumes every suspended task whose wait is satisfied.
    /// Called with the lock held, after any change that can satisfy a wait; it drops the lock
    /// while waking writers (`wakeSatisfiedWriters`) and resuming tasks (a resume must not run
    /// under a lock the cancellation handler takes), and holds it again when it returns.
    func wakeAll() {
        condition.broadcast()
        wakeSatisfiedWriters()
        resumeSatisfiedTasks()
    }

    /// Resumes every suspended task whose wait is satisfied (`wakeAll` without the broadcast).
    /// Called with the lock held; drops it while resuming, as `wakeAll` says.
    func resumeSatisfiedTasks() {
        guard !state.suspended.isEmpty else { return }
        let ready = state.suspended.waits.filter { isSatisfied($0.wait) }.compactMap { parked in
            state.suspended.take(parked.id).map { (continuation: $0, outcome: outcome(of: parked.wait)) }
        }
        guard !ready.isEmpty else { return }
        condition.unlock()
        for (continuation, outcome) in ready { continuation.resume(returning: outcome) }
        condition.lock()
    }

    /// Whether the leader thread should write a batch: records are queued that a suspended
    /// task waits for (directly, or as back-pressure the applier can only relieve once they
    /// are written), and no other leader is at work. Called with the lock held.
    var leaderHasWork: Bool {
        !state.leaderActive && state.failure == nil && state.segment != nil && !state.queue.isEmpty
            && !state.suspended.isEmpty
    }

    /// Starts the log's leader thread, which writes batches for suspended tasks (so no task
    /// ever leads on a cooperative thread). It ends once the log is closed (its segment gone).
    func startLeader() {
        let thread = Thread { [weak self] in
            // The strong reference lives one turn of the loop: a log dropped without `close()`
            // lets the thread end within a second.
            while let log = self {
                log.condition.lock()
                defer { log.condition.unlock() }
                guard log.state.segment != nil else { return }
                log.leaderThreadTurns.wrappingAdd(1, ordering: .relaxed)
                if log.leaderHasWork {
                    log.lead(forceSync: false)
                    log.wakeNextLeader()  // records of writing threads may be left queued
                } else if log.state.suspended.isEmpty {
                    // Only a task that suspends gives this thread work: it rings the bell.
                    log.state.leaderThreadOnBell = true
                    log.condition.unlock()
                    _ = log.leaderBell.wait(timeout: .now() + 1)
                    log.condition.lock()
                    log.state.leaderThreadOnBell = false
                } else {
                    _ = log.condition.wait(until: Date(timeIntervalSinceNow: 1))
                }
            }
        }
        thread.name = "imgstore.wal-leader"
        thread.start()
    }

    /// Wakes the leader thread if it sleeps on `leaderBell`. Called with the lock held: the
    /// thread sets `leaderThreadOnBell` under it before it lets go of the lock to wait, so a
    /// ring is never lost (one that finds it not yet waiting leaves the semaphore counted).
    /// One ring per sleep: the flag is cleared, so a burst of parking tasks leaves no count
    /// behind to cost the thread empty turns later.
    func ringLeaderBell() {
        guard state.leaderThreadOnBell else { return }
        state.leaderThreadOnBell = false
        leaderBell.signal()
    }

    /// Runs `body` holding the log's lock.
    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        condition.lock()
        defer { condition.unlock() }
        return try body()
    }
}

/// The tasks suspended in `WriteAheadLog.appendAsync`, guarded by the log's lock.
///
/// A task takes an id before it suspends, so that a cancellation landing between taking it
/// and parking is remembered (`cancelledEarly`) and the task leaves as it parks. Each
/// continuation is resumed exactly once: by whoever removes it from `parked`.
struct SuspendedWriters {
    private var parked: [Int: (wait: WriteAheadLog.Wait, continuation: CheckedContinuation<WriteAheadLog.WaitOutcome, Never>)] = [:]
    private var reserved: Set<Int> = []
    private var cancelledEarly: Set<Int> = []
    private var nextID = 0

    var isEmpty: Bool { parked.isEmpty }

    mutating func reserveID() -> Int {
        nextID += 1
        reserved.insert(nextID)
        return nextID
    }

    /// True when the task was cancelled before it parked (it must not park).
    mutating func wasCancelledEarly(_ id: Int) -> Bool {
        reserved.remove(id)
        return cancelledEarly.remove(id) != nil
    }

    mutating func park(_ id: Int, wait: WriteAheadLog.Wait, continuation: CheckedContinuation<WriteAheadLog.WaitOutcome, Never>) {
        parked[id] = (wait, continuation)
    }

    /// The cancelled task's continuation to resume, when it is parked; remembers the
    /// cancellation when it has not parked yet; nil when it was resumed already.
    mutating func cancel(_ id: Int) -> CheckedContinuation<WriteAheadLog.WaitOutcome, Never>? {
        if reserved.contains(id) {
            cancelledEarly.insert(id)
            return nil
        }
        return parked.removeValue(forKey: id)?.continuation
    }

    /// What each parked task waits for.
    var waits: [(id: Int, wait: WriteAheadLog.Wait)] { parked.map { ($0.key, $0.value.wait) } }

    /// Removes and returns the continuation of the task `id`, if it is parked.
    mutating func take(_ id: Int) -> CheckedContinuation<WriteAheadLog.WaitOutcome, Never>? {
        parked.removeValue(forKey: id)?.continuation
    }
}
