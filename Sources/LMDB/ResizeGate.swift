#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// The gate every transaction of this process passes through, which swapping the data file
/// (compaction's `replaceDataFile`) takes exclusively.
///
/// The map itself is never resized (it is sized once at `maxMapSize`), so nothing but that swap
/// takes the exclusive side: readers never wait for writers. Transactions hold the gate shared
/// for their whole life; the swap waits for them to end and holds new ones back while it runs.
/// The lock prefers the exclusive side so a steady stream of readers cannot starve the swap.
///
/// Invariant: a thread never takes the shared side twice (no nested transactions: `forEachEntry`
/// calls its body outside any), which is what makes a writer-preferring lock deadlock-free here.
final class ResizeGate: Sendable {
    // The rwlock must not move in memory, so it lives in its own allocation; it is only
    // touched through pthread calls, which are thread safe.
    private nonisolated(unsafe) let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        #if canImport(Glibc)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
        let rc = pthread_rwlock_init(lock, &attributes)
        precondition(rc == 0, "pthread_rwlock_init failed: \(rc)")
        pthread_rwlockattr_destroy(&attributes)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` while holding the gate shared (any number of transactions at once).
    func shared<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` while no other transaction of this process is open.
    func exclusive<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
