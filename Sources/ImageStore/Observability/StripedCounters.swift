import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Counters bumped on every read, spread over stripes so that threads reading at once write
/// different cache lines: a memory hit must scale with the cores, and one shared atomic that
/// every hit increments would make each core steal the line from the others.
///
/// A thread keeps its stripe for life (`ThreadStripe`), handed out round robin, so up to
/// `stripeCount` threads never share one. Reading a total sums the stripes (for a snapshot,
/// not the hot path).
final class StripedCounters: Sendable {
    static let stripeCount = 16
    /// Atomics per stripe: a stripe is two cache lines (128 bytes), of which only the first
    /// `countersPerStripe` slots (64 bytes) are written. The unused line between two stripes
    /// keeps them apart whatever the allocation's alignment.
    private static let slotsPerStripe = 16
    static let countersPerStripe = 8

    private let slots: InlineArray<256, Atomic<Int>>

    init() {
        // Invariant: the inline storage holds every stripe.
        assert(Self.stripeCount * Self.slotsPerStripe == 256)
        slots = InlineArray { _ in Atomic(0) }
    }

    /// Adds one to counter `index` (below `countersPerStripe`) in the calling thread's stripe.
    @inline(__always)
    func increment(_ index: Int) {
        slots[ThreadStripe.current &* Self.slotsPerStripe &+ index].wrappingAdd(1, ordering: .relaxed)
    }

    /// Counter `index` summed over every stripe.
    func total(_ index: Int) -> Int {
        var sum = 0
        for stripe in 0..<Self.stripeCount { sum &+= slots[stripe * Self.slotsPerStripe + index].load(ordering: .relaxed) }
        return sum
    }
}

/// The calling thread's stripe, kept in a pthread key so finding it is one `pthread_getspecific`.
enum ThreadStripe {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        // Invariant: a process has room for at least PTHREAD_KEYS_MAX (1024) keys; this is one.
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()
    private static let next = Atomic<Int>(0)

    /// This thread's stripe, in 0..<StripedCounters.stripeCount.
    @inline(__always)
    static var current: Int {
        if let stored = pthread_getspecific(key) { return Int(bitPattern: stored) &- 1 }
        let stripe = next.wrappingAdd(1, ordering: .relaxed).oldValue % StripedCounters.stripeCount
        // Stored as stripe + 1, so no stripe is the null pointer that means "not set yet".
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: stripe + 1))
        return stripe
    }
}
