#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// A value that can only be reached while holding its lock: `withLock` is the one door.
///
/// Why not `Synchronization.Mutex`: on Linux it is a futex driven by atomics inside the
/// uninstrumented standard library, so ThreadSanitizer sees no happens-before edge between
/// one thread's unlock and the next one's lock and reports every guarded access as a race.
/// A pthread mutex is intercepted by TSan, so `swift test --sanitize=thread` stays meaningful.
package final class LockedValue<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only read or written between `pthread_mutex_lock` and
    // `pthread_mutex_unlock` in `withLock`, and the mutex lives in its own allocation so it
    // never moves.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with exclusive access to the value. Do not call back into the same lock.
    @inline(__always)
    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

extension LockedValue where Value == Void {
    /// Runs `body` holding the lock, for a lock that guards no value of its own (it orders
    /// system calls, as the test support's spawn lock does).
    ///
    /// Why not `withLock { _ in … }`: that begins a Swift `inout` access to the zero-sized
    /// `value` on every call, and ThreadSanitizer reported two such accesses from different
    /// threads (both inside the lock) as a "Swift access race" in a fresh-clone CI run. This
    /// form makes no Swift access at all; only the mutex orders the callers.
    @inline(__always)
    package func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
