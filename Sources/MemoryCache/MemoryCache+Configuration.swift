#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension MemoryCache {
    /// The limits and hooks of a ``MemoryCache``, fixed when the cache is created.
    ///
    /// A limit of `0` means *unlimited* (the `NSCache` convention). The defaults are an unlimited count, a
    /// 64 MiB total cost, no per-entry cap beyond the shard's share of the cost limit, the wall clock, no callback and
    /// an automatic shard count.
    public struct Configuration: Sendable {
        /// The most entries the cache holds at once; `0` means unlimited. Default `0`.
        public var countLimit: Int

        /// The most total cost (for images: bytes) the cache holds at once; `0` means unlimited. Default 64 MiB.
        public var totalCostLimit: Int

        /// An entry whose cost is above this is not cached (and any older value under its key is dropped), so one
        /// huge image cannot flush everything; it counts as an eviction with reason `.costCap`. `nil` means no cap of
        /// its own. Either way an entry must also fit in its shard's share of ``totalCostLimit``
        /// (`totalCostLimit / shardCount`, see ``shardCount``, and never more than
        /// ``MemoryCache/largestShardCost``, also when the limit is 0); a larger one is refused the same way.
        public var maxEntryCost: Int?

        /// The clock that decides expiry, in milliseconds since the Unix epoch. Default: the wall clock.
        ///
        /// It is read on `set` when an `expiresAt` is given and, inside the shard's lock, on a `value(forKey:)` hit of
        /// an entry that has one: keep it cheap and never call back into the cache from it.
        public var now: @Sendable () -> Int64

        /// Called once for every entry that leaves the cache other than by being overwritten under the same key, with
        /// the reason. It runs on the thread that caused the eviction, after the cache's lock is released, so it may
        /// call back into the cache. Default `nil`.
        public var onEviction: (@Sendable (Key, Value, EvictionReason) -> Void)?

        /// How many independently locked shards the keys are spread over (by hash); `nil` (default) chooses
        /// automatically. Rounded up to a power of two, at most 64.
        ///
        /// Each shard applies ``policy`` to its keys with `1/shardCount` of each limit (the remainder going to the
        /// first shards), so the global limits hold after every operation; eviction order is *per shard*. `1` applies
        /// the policy over all keys (exact LRU for `.lru`), at the price of one lock for every thread. Automatic: 16
        /// shards, halved while a shard would get fewer than 64 entries of ``countLimit``, less than 1024 units of
        /// ``totalCostLimit``, or less than 4 × ``maxEntryCost``.
        public var shardCount: Int?

        /// Which entries are evicted first. Default ``MemoryCachePolicy/tinyLFU``.
        public var policy: MemoryCachePolicy

        /// Creates a configuration; every parameter has the default described on its property.
        public init(
            countLimit: Int = 0,
            totalCostLimit: Int = 64 << 20,
            maxEntryCost: Int? = nil,
            policy: MemoryCachePolicy = .tinyLFU,
            shardCount: Int? = nil,
            now: @escaping @Sendable () -> Int64 = MemoryCache.wallClockMilliseconds,
            onEviction: (@Sendable (Key, Value, EvictionReason) -> Void)? = nil
        ) {
            self.countLimit = countLimit
            self.totalCostLimit = totalCostLimit
            self.maxEntryCost = maxEntryCost
            self.policy = policy
            self.shardCount = shardCount
            self.now = now
            self.onEviction = onEviction
        }

        /// Throws ``MemoryCacheError/invalidArgument(name:value:expected:)`` naming the first field out of range:
        /// a negative ``countLimit`` or ``totalCostLimit``, a ``maxEntryCost`` below 1, a ``shardCount`` below 1.
        /// ``MemoryCache/init(configuration:)`` calls it; every value it accepts, up to `Int.max`, is usable (a
        /// shard's cost share is capped at ``MemoryCache/largestShardCost``).
        public func validate() throws(MemoryCacheError) {
            guard countLimit >= 0 else {
                throw .invalidArgument(name: "Configuration.countLimit", value: countLimit, expected: "at least 0 (0 = unlimited)")
            }
            guard totalCostLimit >= 0 else {
                throw .invalidArgument(name: "Configuration.totalCostLimit", value: totalCostLimit,
                                       expected: "at least 0 (0 = unlimited)")
            }
            if let maxEntryCost, maxEntryCost < 1 {
                throw .invalidArgument(name: "Configuration.maxEntryCost", value: maxEntryCost, expected: "at least 1, or nil")
            }
            if let shardCount, shardCount < 1 {
                throw .invalidArgument(name: "Configuration.shardCount", value: shardCount, expected: "at least 1, or nil")
            }
        }

        /// The shard count actually used (a power of two in 1...64). For a configuration that ``validate()``
        /// refuses, the count its out-of-range fields would get if they were 0 (limits) or 1 (`shardCount`).
        public var effectiveShardCount: Int {
            let countLimit = max(countLimit, 0)
            let totalCostLimit = max(totalCostLimit, 0)
            if let requested = shardCount {
                var n = 1
                while n < requested && n < 64 { n <<= 1 }
                return n
            }
            var n = 16
            while n > 1 {
                let countTooSmall = countLimit > 0 && countLimit / n < 64
                let costTooSmall = totalCostLimit > 0 && totalCostLimit / n < 1024
                let capTooSmall = totalCostLimit > 0 && (maxEntryCost.map { totalCostLimit / n / 4 < $0 } ?? false)  // `< 4 × cap`, without overflow
                if !(countTooSmall || costTooSmall || capTooSmall) { break }
                n >>= 1
            }
            return n
        }
    }

    /// The wall clock in milliseconds since the Unix epoch (the default ``Configuration/now``).
    @Sendable public static func wallClockMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

/// Which entries a ``MemoryCache`` evicts first. Either way the limits hold after every operation, and each shard
/// (see ``MemoryCache/Configuration/shardCount``) applies the policy to its own keys.
public enum MemoryCachePolicy: Sendable, Hashable {
    /// Least recently used first: exact LRU within each shard.
    case lru
    /// W-TinyLFU (the policy of Caffeine): a small LRU window (1% of the limits) admits new entries; leaving it, an
    /// entry must have been used more often recently (by a count-min frequency sketch) than the main space's LRU
    /// victim, or it is the one evicted. The main space is a segmented LRU (probation; protected, up to 80%). Keeps
    /// popular entries against scans and one-hit wonders; a `set` into a full cache may therefore be evicted at once
    /// (reason ``MemoryCacheEvictionReason/capacity``).
    ///
    /// Eviction order, defined: the lists are exact LRU lists of *placement* (set, promotion, demotion); a hit marks
    /// its entry instead of moving it, and an entry found marked at a list's evicting end is unmarked and moved as the
    /// hit would have moved it (window, protected: to the front; probation: to protected), then the end is looked at
    /// again. Like Caffeine's buffered reads, this keeps hits from writing shared list links.
    case tinyLFU
}

/// Why an entry left a ``MemoryCache`` (overwriting a key with `set` is not an eviction).
public enum MemoryCacheEvictionReason: Sendable, Hashable, CaseIterable {
    /// Evicted as least recently used to keep `countLimit` / `totalCostLimit`, or by `trim(toCost:)`/`trim(toCount:)`.
    case capacity
    /// Not cached because its cost is above the per-entry cap (see ``MemoryCache/Configuration/maxEntryCost``).
    case costCap
    /// Its `expiresAt` has passed: found on a read, by `removeExpired()`, or already past on `set`.
    case expired
    /// Removed explicitly by `removeValue(forKey:)` or `removeAll()`.
    case removed
}

/// Counters of a ``MemoryCache`` since it was created.
///
/// Each shard's counters are read under its lock, but the shards are read one after another, so under concurrent use
/// the sum is not one atomic snapshot.
public struct MemoryCacheStatistics: Sendable, Hashable {
    /// Lookups that returned a value.
    public var hits: Int = 0
    /// Lookups that returned `nil` (including expired entries).
    public var misses: Int = 0
    /// Successful `set`s (new keys and overwrites; refused entries are not counted).
    public var insertions: Int = 0
    /// Evictions by reason (see ``MemoryCacheEvictionReason``).
    public var evictions: Evictions = .init()
    /// Entries held when the statistics were read (expired entries not yet found are still counted).
    public var count: Int = 0
    /// Total cost held when the statistics were read.
    public var totalCost: Int = 0

    /// `hits / (hits + misses)`, or 0 before the first lookup.
    public var hitRatio: Double { hits + misses == 0 ? 0 : Double(hits) / Double(hits + misses) }

    /// Eviction counts, one per ``MemoryCacheEvictionReason``.
    public struct Evictions: Sendable, Hashable {
        public var capacity = 0, costCap = 0, expired = 0, removed = 0

        public init(capacity: Int = 0, costCap: Int = 0, expired: Int = 0, removed: Int = 0) {
            self.capacity = capacity
            self.costCap = costCap
            self.expired = expired
            self.removed = removed
        }

        /// The count for `reason`.
        public subscript(reason: MemoryCacheEvictionReason) -> Int {
            get {
                switch reason {
                case .capacity: capacity
                case .costCap: costCap
                case .expired: expired
                case .removed: removed
                }
            }
            set {
                switch reason {
                case .capacity: capacity = newValue
                case .costCap: costCap = newValue
                case .expired: expired = newValue
                case .removed: removed = newValue
                }
            }
        }

        /// All evictions, whatever the reason.
        public var total: Int { capacity + costCap + expired + removed }
    }

    public init() {}

    static func += (lhs: inout Self, rhs: Self) {
        lhs.hits += rhs.hits
        lhs.misses += rhs.misses
        lhs.insertions += rhs.insertions
        for reason in MemoryCacheEvictionReason.allCases { lhs.evictions[reason] += rhs.evictions[reason] }
        lhs.count += rhs.count
        lhs.totalCost += rhs.totalCost
    }
}

/// A number given to a ``MemoryCache`` outside its range. The cache is left as it was.
public enum MemoryCacheError: Error, Hashable, Sendable, CustomStringConvertible {
    /// `name` (a ``MemoryCache/Configuration`` field, as `Configuration.countLimit`, or a parameter, as `cost`) was
    /// given `value`; `expected` says what it must be.
    case invalidArgument(name: String, value: Int, expected: String)

    /// One line naming the argument, its value and its range.
    public var description: String {
        switch self {
        case let .invalidArgument(name, value, expected): "MemoryCache: \(name) is \(value); it must be \(expected)"
        }
    }
}
