import Dispatch

/// Runs blocking work (recovery, compaction, verification, settling the log) off Swift's
/// cooperative pool: on a dispatch queue of the store's own, whose threads may block, while
/// the calling task is suspended.
enum Blocking {
    /// Concurrent, so one long verify does not hold up a short checkpoint.
    private static let queue = DispatchQueue(label: "imgstore.blocking", attributes: .concurrent)

    /// Runs `work` on the blocking queue and returns its result; the calling task suspends
    /// meanwhile. `work` runs to completion even when the task is cancelled (a half-done
    /// checkpoint or compaction is not a state to leave behind).
    static func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, E>, Never>) in
            queue.async { continuation.resume(returning: Result { () throws(E) in try work() }) }
        }
        return try result.get()
    }
}
