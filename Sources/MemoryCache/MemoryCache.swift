import Synchronization

/// A thread-safe in-memory cache with count and cost limits: what `NSCache` should have been.
///
/// On Linux, Foundation's `NSCache` evicts the *cheapest* entries first, ignores recency, and counts an entry set
/// without a cost as zero, so its `totalCostLimit` silently does nothing. `MemoryCache` instead:
/// - keeps ``Configuration/countLimit`` and ``Configuration/totalCostLimit`` after *every* operation: keys are spread
///   by hash over ``Configuration/effectiveShardCount`` independently locked shards, each holds a fixed share of both
///   limits (the shares sum to the limits, each share at most ``largestShardCost``) and evicts before its lock is
///   released;
/// - evicts in a defined order, per shard: W-TinyLFU by default (``MemoryCachePolicy/tinyLFU``: recency *and* frequency, the
///   policy of Caffeine, with hits applied lazily as CLOCK's second chance, see ``value(forKey:)``), or exact LRU
///   (``MemoryCachePolicy/lru``). With `shardCount: 1` the order is over all keys;
/// - requires a positive cost for every entry (a typed error otherwise) and refuses entries above the per-entry cap;
/// - never returns an entry whose `expiresAt` has passed;
/// - does get, set and remove in O(1) (amortised, for the frequency sketch's ageing).
///
/// Overwriting a key replaces its value at once; a `set` that is refused (cost cap, already expired) still drops the
/// older value, so after `set(v, forKey: k, …)` the cache returns `v` or nothing for `k`, never an older value.
///
/// All methods may be called from any thread. The eviction callback runs after the lock is released.
///
/// Why shards: one lock around an LRU serialises every read, since a hit moves a list node; two threads then run
/// slower than one. Each shard is a `Mutex` in its own padded allocation, so threads touching different shards share
/// no written cache line.
public final class MemoryCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// Why an entry left the cache.
    public typealias EvictionReason = MemoryCacheEvictionReason
    /// Counters since creation.
    public typealias Statistics = MemoryCacheStatistics
    /// What is evicted first.
    public typealias Policy = MemoryCachePolicy

    /// The configuration the cache was created with.
    public let configuration: Configuration

    @usableFromInline let shards: ContiguousArray<Shard<Key, Value>>
    /// `64 - log2(shards.count)`: a key's shard is the top bits of its scrambled hash.
    @usableFromInline let shardShift: UInt64
    @usableFromInline let now: @Sendable () -> Int64
    @usableFromInline let onEviction: (@Sendable (Key, Value, EvictionReason) -> Void)?

    /// Creates an empty cache with `configuration`'s limits.
    /// - Throws: ``MemoryCacheError/invalidArgument(name:value:expected:)`` for a field out of range (see
    ///   ``Configuration/validate()``).
    public convenience init(configuration: Configuration) throws(MemoryCacheError) {
        try configuration.validate()
        self.init(validated: configuration)
    }

    /// Creates an empty cache with the default configuration (unlimited count, 64 MiB of cost), which is always valid.
    public convenience init() {
        self.init(validated: Configuration())
    }

    /// Invariant: `configuration.validate()` accepts `configuration`.
    private init(validated configuration: Configuration) {
        let n = configuration.effectiveShardCount
        self.configuration = configuration
        self.now = configuration.now
        self.onEviction = configuration.onEviction
        self.shardShift = UInt64(64 - n.trailingZeroBitCount)
        let counts = Self.split(configuration.countLimit, into: n)
        let costs = Self.split(configuration.totalCostLimit, into: n).map { min($0, Self.largestShardCost) }
        let cap = configuration.maxEntryCost ?? .max
        self.shards = ContiguousArray(
            (0..<n).map {
                Shard(
                    ShardState(
                        countLimit: counts[$0], costLimit: costs[$0], maxEntryCost: min(cap, costs[$0]),
                        policy: configuration.policy))
            })
    }

    /// The most cost one shard holds, however large (or unlimited) the configured limit: about 7 × 10¹⁶, so a
    /// shard's total plus one more entry, and the sum over 64 shards, never overflow `Int`. An entry costing more is
    /// refused as over the cap (reason ``MemoryCacheEvictionReason/costCap``).
    public static var largestShardCost: Int { Int.max / 128 }

    /// `limit` divided into `n` shares that sum to it (the first shards take the remainder); `0` (unlimited) becomes
    /// `Int.max` for every shard.
    static func split(_ limit: Int, into n: Int) -> [Int] {
        guard limit > 0 else { return Array(repeating: .max, count: n) }
        return (0..<n).map { limit / n + ($0 < limit % n ? 1 : 0) }
    }

    /// The shard that owns `key`. An index rather than the shard itself: returning the object would retain and
    /// release it on every operation (an atomic write to a line other threads use).
    @inlinable
    func shardIndex(forHash hash: Int) -> Int {
        // Fibonacci scrambling, top bits: the dictionary inside the shard uses the low bits of its own seeded hash,
        // so the shard choice does not bunch keys within a shard's table. (`>>` by 64, for one shard, gives 0.)
        Int(truncatingIfNeeded: (UInt64(truncatingIfNeeded: hash) &* 0x9E37_79B9_7F4A_7C15) >> shardShift)
    }

    /// Runs `body` with the state of the shard that owns `hash` locked.
    ///
    /// The shard is not retained: `shards` is a `let` that holds every shard for the cache's life, and `self` is
    /// alive for the call. A retain here was an atomic write to the shard object's reference count, a line that every
    /// thread using that shard shares, on every operation.
    @inlinable
    func withShard<R>(forHash hash: Int, _ body: (inout ShardState<Key, Value>) -> R) -> R {
        // `_withUnsafeGuaranteedRef`: a method call through `unowned(unsafe)` still retained it.
        Unmanaged.passUnretained(shards[shardIndex(forHash: hash)])._withUnsafeGuaranteedRef { $0.withLock(body) }
    }

    // MARK: - Reading

    /// The value for `key`, or `nil`. A hit counts as a use; an entry whose `expiresAt` has passed is removed (reason
    /// ``MemoryCacheEvictionReason/expired``) and reads as a miss.
    ///
    /// Under ``MemoryCachePolicy/lru`` the entry becomes the most recently used at once. Under
    /// ``MemoryCachePolicy/tinyLFU`` the lookup is counted in the frequency sketch and the entry is only *marked*: it
    /// moves (to the front of its list, or from probation up to protected) when it next reaches the evicting end of its
    /// list, CLOCK's second chance. So a hit writes no list links, and repeated hits on the same entry write only the
    /// shard's lock word and hit counter.
    @inlinable
    public func value(forKey key: Key) -> Value? {
        let hash = key.hashValue
        // The clock is read through `self` only for entries that can expire, by a closure made inside the locked
        // body: a closure made out here and handed in (a `lookUp(_:now:)` taking it) costs two threads hitting
        // the same keys a third of their rate (measured: 10.5 M/s → 7 M/s, `imgstore-bench --cases memory.get-hit`).
        let result = withShard(forHash: hash) {
            $0.value(forKey: key, hash: hash, now: { self.now() })
        }
        return finished(result)
    }

    /// `value(forKey:)` at the time `now` (milliseconds of the cache's clock), for a caller that has just read that
    /// clock itself: the lookup then reads no clock, and holds the shard's lock for less time.
    @inlinable
    public func value(forKey key: Key, at now: Int64) -> Value? {
        value(forKey: key, hash: key.hashValue, at: now)
    }

    /// `value(forKey:at:)` with the key's hash supplied (see ``set(_:forKey:hash:cost:expiresAt:)``).
    @inlinable
    public func value(forKey key: Key, hash: Int, at now: Int64) -> Value? {
        let result = withShard(forHash: hash) {
            $0.value(forKey: key, hash: hash, now: { now })
        }
        return finished(result)
    }

    /// `value(forKey:)` with the time supplied by the caller: `now` is called (at most once, inside the shard's lock)
    /// only when the key's entry has an `expiresAt`, so a miss or a hit on an entry that never expires reads no
    /// clock. For a caller that may need the same time afterwards and reads it once, lazily. Keep `now` cheap and
    /// never call back into the cache from it (as ``Configuration/now``).
    @inlinable
    public func value(forKey key: Key, now: () -> Int64) -> Value? {
        value(forKey: key, hash: key.hashValue, now: now)
    }

    /// `value(forKey:now:)` with the key's hash supplied (see ``set(_:forKey:hash:cost:expiresAt:)``).
    @inlinable
    public func value(forKey key: Key, hash: Int, now: () -> Int64) -> Value? {
        let result = withShard(forHash: hash) {
            $0.value(forKey: key, hash: hash, now: now)
        }
        return finished(result)
    }

    /// A lookup's value, reporting an entry found expired to `onEviction` (outside the shard's lock).
    @inlinable
    func finished(_ result: Lookup<Key, Value>) -> Value? {
        switch result {
        case .hit(let value):
            return value
        case .miss:
            return nil
        case .expired(let key, let value):
            onEviction?(key, value, .expired)
            return nil
        }
    }

    /// The number of entries held (entries that expired but were not read since are still counted).
    public var count: Int { shards.reduce(0) { $0 + $1.withLock { $0.nodes.count } } }

    /// The total cost of the entries held.
    public var totalCost: Int { shards.reduce(0) { $0 + $1.withLock { $0.totalCost } } }

    /// Hits, misses, insertions, evictions by reason, count and total cost, summed over the shards.
    public var statistics: Statistics {
        var total = Statistics()
        for shard in shards {
            total += shard.withLock {
                var s = $0.stats
                s.count = $0.nodes.count
                s.totalCost = $0.totalCost
                return s
            }
        }
        return total
    }

    // MARK: - Writing

    /// Stores `value` under `key` as the most recently used entry, replacing any older value (the replaced value is
    /// not reported to `onEviction`), then evicts from the shard until the limits hold (under W-TinyLFU the new entry
    /// itself may lose admission to a more frequently used one and be evicted at once, reason
    /// ``MemoryCacheEvictionReason/capacity``).
    ///
    /// The entry is refused — and any older value under `key` dropped, so a stale value is never served after an
    /// overwrite — if `cost` is above the per-entry cap (reason ``MemoryCacheEvictionReason/costCap``) or `expiresAt` is not
    /// after ``Configuration/now`` (reason ``MemoryCacheEvictionReason/expired``).
    ///
    /// - Parameters:
    ///   - cost: the entry's cost, for images their byte count; at least 1, so a cost is never silently zero.
    ///   - expiresAt: milliseconds since the Unix epoch after which the entry is never returned; `nil` = never.
    /// - Throws: ``MemoryCacheError/invalidArgument(name:value:expected:)`` (`cost`) for a cost below 1; the cache is
    ///   unchanged, and an older value under `key` stays.
    @inlinable
    public func set(_ value: Value, forKey key: Key, cost: Int, expiresAt: Int64? = nil) throws(MemoryCacheError) {
        try set(value, forKey: key, hash: key.hashValue, cost: cost, expiresAt: expiresAt)
    }

    /// `set(_:forKey:cost:expiresAt:)` with the key's hash supplied, for a caller that has a hash of its keys already
    /// (a store that hashes every key for its own index). The cache then hashes nothing.
    ///
    /// Invariant the caller keeps: every operation on one key passes the same `hash` (these `hash:` variants
    /// throughout, never the plain ones, which use `hashValue`), and the hashes are well mixed and cannot be predicted
    /// from the keys by whoever chooses them: they pick the shard and the table slot. A fixed function such as XXH3
    /// can be predicted, so mix a per-process secret into its whole output (a secret XORed into part of it leaves the
    /// collisions of that part).
    @inlinable
    public func set(_ value: Value, forKey key: Key, hash: Int, cost: Int, expiresAt: Int64? = nil) throws(MemoryCacheError) {
        guard cost > 0 else { throw .invalidArgument(name: "cost", value: cost, expected: "at least 1") }
        let now = expiresAt == nil ? nil : self.now()
        let collect = onEviction != nil
        let evicted = withShard(forHash: hash) {
            var evicted: [Eviction<Key, Value>] = []
            $0.set(
                value, forKey: key, hash: hash, cost: cost, expiresAt: expiresAt ?? .max, now: now,
                evicted: &evicted, collect: collect)
            return evicted
        }
        report(evicted)
    }

    /// Removes and returns the value for `key` (reason ``MemoryCacheEvictionReason/removed``), or returns `nil`.
    @inlinable @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        removeValue(forKey: key, hash: key.hashValue)
    }

    /// `removeValue(forKey:)` with the key's hash supplied (see ``set(_:forKey:hash:cost:expiresAt:)``).
    @inlinable @discardableResult
    public func removeValue(forKey key: Key, hash: Int) -> Value? {
        let removed = withShard(forHash: hash) { $0.removeValue(forKey: key, hash: hash) }
        if let removed, let onEviction { onEviction(key, removed, .removed) }
        return removed
    }

    /// Removes every entry (reason ``MemoryCacheEvictionReason/removed``). Shards are emptied one after another: an entry set
    /// concurrently may survive.
    public func removeAll() {
        forEachShard { state, evicted, collect in state.removeAll(reason: .removed, evicted: &evicted, collect: collect)
        }
    }

    /// Removes every entry whose `expiresAt` is not after ``Configuration/now`` (reason ``MemoryCacheEvictionReason/expired``).
    /// O(n); expired entries are otherwise removed only when read.
    public func removeExpired() {
        let now = self.now()
        forEachShard { state, evicted, collect in state.removeExpired(now: now, evicted: &evicted, collect: collect) }
    }

    /// Evicts entries in eviction order (LRU: least recently used first; W-TinyLFU: probation, then protected, then
    /// window, each from its least recently used end, where a marked entry gets its second chance; reason ``MemoryCacheEvictionReason/capacity``) until the total cost is at most
    /// `cost`.
    /// Each shard is trimmed to its share of `cost`, so the total may end somewhat below it.
    /// - Throws: ``MemoryCacheError/invalidArgument(name:value:expected:)`` (`cost`) for a negative cost; nothing is
    ///   evicted.
    public func trim(toCost cost: Int) throws(MemoryCacheError) {
        guard cost >= 0 else { throw .invalidArgument(name: "cost", value: cost, expected: "at least 0") }
        let shares = Self.split(cost, into: shards.count).map { cost == 0 ? 0 : $0 }
        var i = 0
        forEachShard { state, evicted, collect in
            state.trim(toCount: .max, toCost: shares[i], evicted: &evicted, collect: collect)
            i += 1
        }
    }

    /// Evicts entries in eviction order (see ``trim(toCost:)``; reason ``MemoryCacheEvictionReason/capacity``) until at most
    /// `count` remain.
    /// Each shard is trimmed to its share of `count`, so the total may end somewhat below it.
    /// - Throws: ``MemoryCacheError/invalidArgument(name:value:expected:)`` (`count`) for a negative count; nothing is
    ///   evicted.
    public func trim(toCount count: Int) throws(MemoryCacheError) {
        guard count >= 0 else { throw .invalidArgument(name: "count", value: count, expected: "at least 0") }
        let shares = Self.split(count, into: shards.count).map { count == 0 ? 0 : $0 }
        var i = 0
        forEachShard { state, evicted, collect in
            state.trim(toCount: shares[i], toCost: .max, evicted: &evicted, collect: collect)
            i += 1
        }
    }

    // MARK: - Helpers

    func forEachShard(
        _ body: (inout ShardState<Key, Value>, inout [Eviction<Key, Value>], Bool) -> Void
    ) {
        let collect = onEviction != nil
        for shard in shards {
            let evicted = shard.withLock { state in
                var evicted: [Eviction<Key, Value>] = []
                body(&state, &evicted, collect)
                return evicted
            }
            report(evicted)  // outside the lock, shard by shard
        }
    }

    @inlinable
    func report(_ evicted: [Eviction<Key, Value>]) {
        guard let onEviction, !evicted.isEmpty else { return }
        for e in evicted { onEviction(e.key, e.value, e.reason) }
    }

    // MARK: - Testing support

    /// Checks every internal invariant of every shard and traps on the first broken one. O(n); for tests.
    public func _checkInvariants() {
        var count = 0, cost = 0
        for (index, shard) in shards.enumerated() {
            shard.withLock {
                $0.checkInvariants()
                // Invariant: a node lives in the shard its hash picks.
                for node in $0.nodes { precondition(shardIndex(forHash: node.hash) == index, "a node in the wrong shard") }
                count += $0.nodes.count
                cost += $0.totalCost
            }
        }
        // Invariant: the global limits hold (the shards' shares sum to them, or to less where a cost share was
        // capped at `largestShardCost`).
        if configuration.countLimit > 0 { precondition(count <= configuration.countLimit, "over countLimit") }
        if configuration.totalCostLimit > 0 {
            precondition(cost <= configuration.totalCostLimit, "over totalCostLimit")
        }
    }

    /// Keys of each shard from most to least recently used; for tests of eviction order.
    package func _keysByRecency() -> [[Key]] {
        shards.map { $0.withLock { $0.keysByRecency() } }
    }
}
