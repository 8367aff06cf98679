import Locking
import Synchronization

/// Last-access times noted by reads, kept in memory and persisted in batches by the writer
/// (a read must never cost a write transaction). Striped by key hash so concurrent readers
/// rarely meet on one lock.
final class AccessTracker: Sendable {
    private static let stripeCount = 16
    private final class Stripe: Sendable { let times = LockedValue<[String: Int64]>([:]) }
    private let stripes: [Stripe]

    init() {
        stripes = (0..<Self.stripeCount).map { _ in Stripe() }
    }

    private func stripe(_ cacheKey: String) -> Int {
        Int(UInt(bitPattern: cacheKey.hashValue) % UInt(Self.stripeCount))
    }

    /// Notes a read of `cacheKey` at `time`.
    func touch(_ cacheKey: String, at time: Int64) {
        stripes[stripe(cacheKey)].times.withLock { times in
            if times[cacheKey].map({ $0 < time }) ?? true { times[cacheKey] = time }
        }
    }

    /// The last noted access not yet persisted, if any.
    func lastAccess(_ cacheKey: String) -> Int64? {
        stripes[stripe(cacheKey)].times.withLock { $0[cacheKey] }
    }

    /// Forgets `cacheKey` (its entry was replaced or removed).
    func forget(_ cacheKey: String) {
        _ = stripes[stripe(cacheKey)].times.withLock { $0.removeValue(forKey: cacheKey) }
    }

    /// Takes everything noted so far, for persisting.
    func drain() -> [String: Int64] {
        var all: [String: Int64] = [:]
        for stripe in stripes {
            all.merge(stripe.times.withLock { times in defer { times = [:] }; return times }) { max($0, $1) }
        }
        return all
    }

    /// Keys noted and not yet persisted.
    var count: Int { stripes.reduce(0) { $0 + $1.times.withLock { $0.count } } }
}
