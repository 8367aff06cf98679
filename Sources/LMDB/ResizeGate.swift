import Synchronization
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
/// The gate prefers the exclusive side, so a steady stream of readers cannot starve the swap.
///
/// Striped, because every read passes through it: the shared side is one atomic add on a
/// counter of the thread's own stripe (`stripeCount` counters, each on its own cache line),
/// so readers on different threads write different lines, where a `pthread_rwlock_t` has
/// every reader write the lock's one line twice.
///
/// The protocol (both sides sequentially consistent, so each sees the other's store):
/// - shared: add 1 to the thread's stripe, then read `exclusiveWanted`. Clear: enter. Set:
///   take the 1 back, wait for the exclusive holder by taking and releasing `turn`, retry.
/// - exclusive: take `turn`, set `exclusiveWanted`, then wait until every stripe reads 0.
///   No new shared holder can enter from then on (it would see the flag), and every one
///   that entered before has left.
///
/// Invariant: a thread never takes the shared side twice (no nested transactions: `forEachEntry`
/// calls its body outside any), which is what makes an exclusive-preferring gate deadlock-free
/// here. Exclusive turns are rare (one per compaction): back-to-back turns would starve readers.
final class ResizeGate: Sendable {
    private static let stripeCount = 16

    /// How many shared holders entered through each stripe.
    private let stripes = ThreadStripedAtomics(count: stripeCount)
    /// Set by the exclusive side, under `turn`, while it waits and while it holds the gate.
    private let exclusiveWanted = Atomic<Bool>(false)
    /// Held by the exclusive side for its whole turn; a shared holder that saw
    /// `exclusiveWanted` waits on it. Lives in its own allocation (a mutex must not move).
    private nonisolated(unsafe) let turn: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        turn = .allocate(capacity: 1)
        let rc = pthread_mutex_init(turn, nil)
        precondition(rc == 0, "pthread_mutex_init failed: \(rc)")
    }

    deinit {
        assert(stripes.all(equal: 0), "a transaction outlived its gate")
        pthread_mutex_destroy(turn)
        turn.deallocate()
    }

    /// Runs `body` while holding the gate shared (any number of transactions at once).
    func shared<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        let counter = stripes.at(stripes.home)
        while true {
            counter.pointee.add(1, ordering: .sequentiallyConsistent)
            if !exclusiveWanted.load(ordering: .sequentiallyConsistent) { break }
            counter.pointee.subtract(1, ordering: .sequentiallyConsistent)
            pthread_mutex_lock(turn)  // returns once the exclusive turn is over
            pthread_mutex_unlock(turn)
        }
        defer { counter.pointee.subtract(1, ordering: .releasing) }
        return try body()
    }

    /// Runs `body` while no other transaction of this process is open.
    func exclusive<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(turn)
        defer { pthread_mutex_unlock(turn) }
        exclusiveWanted.store(true, ordering: .sequentiallyConsistent)
        defer { exclusiveWanted.store(false, ordering: .releasing) }
        for index in 0..<stripes.count { Self.waitUntilZero(stripes.at(index)) }
        return try body()
    }

    /// Waits for the shared holders counted on `counter` to leave: yields first (they are
    /// transactions, mostly short), then sleeps in growing steps up to a millisecond.
    private static func waitUntilZero(_ counter: UnsafeMutablePointer<Atomic<Int>>) {
        var rounds = 0
        while counter.pointee.load(ordering: .acquiring) != 0 {
            rounds += 1
            if rounds < 64 { sched_yield() } else { usleep(useconds_t(min(1 << min(rounds - 64, 10), 1000))) }
        }
    }
}
