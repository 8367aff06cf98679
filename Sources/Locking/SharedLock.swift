#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// A lock with a shared side, which any number of threads hold at once, and an exclusive side,
/// which excludes both: a `pthread_rwlock_t` (so ThreadSanitizer sees its edges, as
/// `LockedValue`'s mutex). It guards no value: the caller states what each side protects.
///
/// Writers are preferred on Linux (`PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP`): a steady
/// stream of shared holders cannot starve the exclusive side. So a thread must never take the
/// shared side twice (a waiting exclusive holder would block the inner one forever), nor either
/// side while it holds the other. (glibc before 2.29 could stall a reader of an unlocked lock of
/// this kind, its bug 23861; Debian 12 ships 2.36.)
package final class SharedLock: @unchecked Sendable {
    // @unchecked Sendable: the lock lives in its own allocation, so it never moves, and is only
    // touched through the pthread calls, which are thread-safe.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    package init() {
        lock = .allocate(capacity: 1)
        var attributes = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attributes)
        defer { pthread_rwlockattr_destroy(&attributes) }
        #if canImport(Glibc)
        pthread_rwlockattr_setkind_np(&attributes, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        #endif
        let rc = pthread_rwlock_init(lock, &attributes)
        precondition(rc == 0, "pthread_rwlock_init failed: \(rc)")
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// Runs `body` holding the shared side.
    @inline(__always)
    package func shared<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try holding(pthread_rwlock_rdlock, body)
    }

    /// Runs `body` holding the exclusive side: no other holder of either side.
    @inline(__always)
    package func exclusive<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        try holding(pthread_rwlock_wrlock, body)
    }

    /// Runs `body` between `take(lock)` (which must succeed) and the unlock.
    @inline(__always)
    private func holding<R, E: Error>(
        _ take: (UnsafeMutablePointer<pthread_rwlock_t>) -> Int32, _ body: () throws(E) -> R
    ) throws(E) -> R {
        let rc = take(lock)
        precondition(rc == 0, "taking a pthread_rwlock_t failed: \(rc)")
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}
