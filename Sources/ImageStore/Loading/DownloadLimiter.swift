import Locking

/// An async counting semaphore: at most `limit` downloads hold a slot; the rest wait in FIFO
/// order without blocking a thread. A waiter whose task is cancelled leaves the queue at once.
final class DownloadLimiter: Sendable {
    private struct State {
        var available: Int
        var nextID = 0
        /// Ids that called `acquire` and have not yet enqueued or been granted.
        var pending: Set<Int> = []
        /// Ids cancelled while pending: they give up as soon as they try to enqueue.
        var cancelledEarly: Set<Int> = []
        var waiters: [(id: Int, continuation: CheckedContinuation<Bool, Never>)] = []
    }

    // LockedValue, not Mutex: ThreadSanitizer cannot see Mutex's futex on Linux (see Locking).
    private let state: LockedValue<State>

    init(limit: Int) {
        precondition(limit > 0, "the download limit must be positive")
        state = LockedValue(State(available: limit))
    }

    /// Waits for a slot; false when the task was cancelled first (no slot is then held).
    func acquire() async -> Bool {
        let id = state.withLock { state in
            state.nextID += 1
            state.pending.insert(state.nextID)
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let granted: Bool? = state.withLock { state in
                    state.pending.remove(id)
                    if state.cancelledEarly.remove(id) != nil { return false }
                    if state.available > 0 {
                        state.available -= 1
                        return true
                    }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let granted { continuation.resume(returning: granted) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                if state.pending.remove(id) != nil {
                    state.cancelledEarly.insert(id)
                    return nil
                }
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(returning: false)
        }
    }

    /// Returns a slot taken by a successful `acquire`, handing it to the oldest waiter.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume(returning: true)
    }
}
