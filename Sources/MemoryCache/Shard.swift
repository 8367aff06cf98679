import Synchronization

/// One lock and the entries whose keys hash to it.
///
/// A class so that every shard's lock lives in its own allocation; the trailing padding keeps two shards' hot words
/// off one cache line (two cores hammering neighbouring shards would otherwise still ping-pong that line).
@usableFromInline
final class Shard<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    // Guarded by itself: everything mutable in a shard is inside this mutex.
    @usableFromInline let state: Mutex<ShardState<Key, Value>>
    @usableFromInline let sanitizer = ThreadSanitizerAnnotations()
    private let padding: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) = (0, 0, 0, 0, 0, 0, 0, 0)

    init(_ state: ShardState<Key, Value>) {
        self.state = Mutex(state)
    }

    /// Runs `body` with the shard's state locked. Every access to the state goes through here.
    @inlinable
    func withLock<R>(_ body: (inout ShardState<Key, Value>) -> R) -> R {
        state.withLock { state in
            if let acquire = sanitizer.acquire {
                let me = Unmanaged.passUnretained(self).toOpaque()
                acquire(me)
                defer { sanitizer.release?(me) }
                return body(&state)
            }
            return body(&state)
        }
    }
}

/// An entry removed from the cache, handed to the eviction callback after the lock is released.
@usableFromInline
struct Eviction<Key, Value> {
    @usableFromInline var key: Key
    @usableFromInline var value: Value
    @usableFromInline var reason: MemoryCacheEvictionReason

    @inlinable init(key: Key, value: Value, reason: MemoryCacheEvictionReason) {
        self.key = key
        self.value = value
        self.reason = reason
    }
}

/// The result of a lookup inside a shard.
@usableFromInline
enum Lookup<Key, Value> {
    case hit(Value)
    case miss
    case expired(Key, Value)
}

/// The lists a shard's entries live on. With ``MemoryCachePolicy/lru`` only `window` is used (it *is* the LRU list).
@usableFromInline
enum Segment: UInt8, Sendable, CaseIterable {
    /// Newest entries (all entries, for plain LRU).
    case window = 0
    /// Main space, seen once there: the admission victims come from its LRU end.
    case probation = 1
    /// Main space, hit again while in probation.
    case `protected` = 2
}

/// A shard's entries: one dense array of nodes, linked into doubly linked lists by `Int32` slot numbers (no per-entry
/// allocation), and an open-addressing hash table from key to slot. A removed slot is filled by moving the last entry
/// into it, so `nodes` never has holes and needs no optional payload.
///
/// The table is ours rather than a `Dictionary` so the key is hashed once per operation: the façade's hash (the key's
/// `hashValue`, or the caller's through the `hash:` variants) picks the shard, is kept in the node, and places the key
/// in the table (linear probing, at most half full, backward-shift deletion, so no tombstones).
///
/// Plain LRU: one list, most recently used at the head, victims from the tail.
///
/// W-TinyLFU (after Caffeine): a small LRU *window* (1% of the shard's limits) in front of a segmented LRU main space
/// (*probation*, and *protected* with up to 80% of the limits). A new entry enters the window; the entry pushed out of
/// the window moves to probation and, when the shard is over its limits, duels the probation LRU victim: whichever a
/// frequency sketch has seen less often is evicted. A probation hit moves the entry to protected, whose overflow goes
/// back to probation. One-hit wonders thus cannot flush frequently used entries.
///
/// Only ever touched inside its shard's `Mutex`. Every method is O(1) (amortised, for the sketch's ageing) except
/// `removeAll`, `removeExpired` and the invariant check.
@usableFromInline
struct ShardState<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline
    struct Node: Sendable {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
        @usableFromInline var cost: Int
        /// Milliseconds since the epoch; `Int64.max` = never.
        @usableFromInline var expiresAt: Int64
        /// The hash the key was set with (`hashValue` or the caller's), kept for the table and the frequency sketch.
        @usableFromInline var hash: Int
        /// Towards the most recently used end; `-1` at the head.
        @usableFromInline var prev: Int32
        /// Towards the least recently used end; `-1` at the tail.
        @usableFromInline var next: Int32
        @usableFromInline var segment: Segment
        /// W-TinyLFU only: hit since it last reached the evicting end of its list (the deferred use, see
        /// `unreferencedTail`). Written by a hit only when clear, so repeated hits write nothing here.
        @usableFromInline var referenced: Bool

        @inlinable
        init(key: Key, value: Value, cost: Int, expiresAt: Int64, hash: Int, segment: Segment) {
            self.key = key
            self.value = value
            self.cost = cost
            self.expiresAt = expiresAt
            self.hash = hash
            self.prev = -1
            self.next = -1
            self.segment = segment
            self.referenced = false
        }
    }

    /// The two ends of one list, and what it holds.
    @usableFromInline
    struct List: Sendable {
        @usableFromInline var head: Int32 = -1
        @usableFromInline var tail: Int32 = -1
        @usableFromInline var count = 0
        @usableFromInline var cost = 0
        @inlinable init() {}
    }

    @usableFromInline static var none: Int32 { -1 }

    // First, so the counters a hit bumps share the cache line of the shard's lock word (which a hit writes anyway).
    @usableFromInline var stats = MemoryCacheStatistics()
    /// Slot numbers by `HashMix.mix(hash)`, `-1` = empty; a power of two long, at most half full.
    @usableFromInline var buckets = [Int32](repeating: -1, count: 16)
    @usableFromInline var nodes: ContiguousArray<Node> = []
    @usableFromInline var window = List()
    @usableFromInline var probation = List()
    @usableFromInline var protected = List()
    @usableFromInline var totalCost = 0
    /// This shard's share of the limits; `Int.max` when unlimited.
    @usableFromInline let countLimit: Int
    @usableFromInline let costLimit: Int
    /// The largest cost this shard accepts (min of the configured cap and `costLimit`).
    @usableFromInline let maxEntryCost: Int
    /// `nil` for plain LRU.
    /// W-TinyLFU's frequency sketch; unused (and tiny) for plain LRU. Not an optional: mutating through `sketch?.`
    /// copied the sketch out and back, so its table was no longer uniquely referenced and was copied on every
    /// increment.
    @usableFromInline var sketch: FrequencySketch
    /// Whether the policy is W-TinyLFU.
    @usableFromInline let admission: Bool
    @usableFromInline let windowMaxCount: Int, windowMaxCost: Int
    @usableFromInline let protectedMaxCount: Int, protectedMaxCost: Int

    init(countLimit: Int, costLimit: Int, maxEntryCost: Int, policy: MemoryCachePolicy) {
        self.countLimit = countLimit
        self.costLimit = costLimit
        self.maxEntryCost = maxEntryCost
        func share(_ limit: Int, _ percent: Int) -> Int {
            limit == .max ? .max : max(1, limit / 100 * percent + limit % 100 * percent / 100)
        }
        switch policy {
        case .lru:
            sketch = FrequencySketch(expectedEntries: 0)
            admission = false
            (windowMaxCount, windowMaxCost, protectedMaxCount, protectedMaxCost) = (.max, .max, 0, 0)
        case .tinyLFU:
            sketch = FrequencySketch(expectedEntries: countLimit == .max ? 64 : min(countLimit, 1 << 20))
            admission = true
            windowMaxCount = share(countLimit, 1)
            windowMaxCost = share(costLimit, 1)
            protectedMaxCount = share(countLimit, 80)
            protectedMaxCost = share(costLimit, 80)
        }
    }

    // MARK: - Operations

    /// Looks `key` up; a hit counts as a use, an expired entry is removed.
    ///
    /// Plain LRU moves the entry to the front at once. W-TinyLFU only marks it `referenced` (a write only the first
    /// time): the move is deferred until the entry reaches the evicting end of its list (`unreferencedTail`), so a
    /// read-mostly workload writes no list links, no neighbouring nodes and no list heads on a hit.
    @inlinable
    mutating func value(forKey key: Key, hash: Int, now: () -> Int64) -> Lookup<Key, Value> {
        if admission { sketch.increment(hash) }
        let slot = find(key, hash: hash).slot
        guard slot >= 0 else {
            stats.misses &+= 1
            return .miss
        }
        // Through a buffer pointer: reading a field through the array copied (and retained) the whole node.
        let (expiresAt, referenced) = nodes.withUnsafeBufferPointer { ($0[Int(slot)].expiresAt, $0[Int(slot)].referenced) }
        if expiresAt != .max && expiresAt <= now() {
            var ignored = Self.none
            let node = remove(slot: slot, tracking: &ignored)
            stats.misses &+= 1
            stats.evictions.expired &+= 1
            return .expired(node.key, node.value)
        }
        stats.hits &+= 1
        if !admission {
            touch(slot)
        } else if !referenced {
            nodes[Int(slot)].referenced = true
        }
        return .hit(nodes.withUnsafeBufferPointer { $0[Int(slot)].value })
    }

    /// Inserts or overwrites `key` as the newest entry, then evicts until the limits hold. An entry over the cost cap,
    /// or already expired at `now`, is refused and any older value under `key` dropped (so the cache never serves a
    /// value older than the last `set`).
    @inlinable
    mutating func set(
        _ value: Value, forKey key: Key, hash: Int, cost: Int, expiresAt: Int64, now: Int64?,
        evicted: inout [Eviction<Key, Value>], collect: Bool
    ) {
        let refusal: MemoryCacheEvictionReason? =
            cost > maxEntryCost ? .costCap : (now.map { expiresAt <= $0 } ?? false) ? .expired : nil
        if let refusal {
            let slot = find(key, hash: hash).slot
            if slot >= 0 {
                var ignored = Self.none
                _ = remove(slot: slot, tracking: &ignored)
            }
            stats.evictions[refusal] &+= 1
            if collect { evicted.append(Eviction(key: key, value: value, reason: refusal)) }
            return
        }
        if admission { sketch.increment(hash) }
        let (bucket, slot) = find(key, hash: hash)
        if slot >= 0 {
            // Overwrite in place.
            let segment = nodes[Int(slot)].segment
            unlink(slot)
            totalCost += cost - nodes[Int(slot)].cost
            nodes[Int(slot)].value = value
            nodes[Int(slot)].cost = cost
            nodes[Int(slot)].expiresAt = expiresAt
            nodes[Int(slot)].referenced = false  // the use is applied now
            link(slot, into: segment)
            touch(slot)
        } else {
            let newSlot = Int32(truncatingIfNeeded: nodes.count)
            nodes.append(Node(key: key, value: value, cost: cost, expiresAt: expiresAt, hash: hash, segment: .window))
            buckets[bucket] = newSlot
            if nodes.count &* 2 > buckets.count { growTable() }
            link(newSlot, into: .window)
            totalCost += cost
            // Invariant: slot numbers fit the `Int32` links (2³¹ entries in one shard would be a programmer error).
            precondition(nodes.count < Int32.max, "MemoryCache: more than 2^31 entries in one shard")
            if admission { sketch.reserve(entries: nodes.count) }
        }
        stats.insertions &+= 1
        evictForLimits(evicted: &evicted, collect: collect)
    }

    /// Removes `key`, returning its value.
    @inlinable
    mutating func removeValue(forKey key: Key, hash: Int) -> Value? {
        let slot = find(key, hash: hash).slot
        guard slot >= 0 else { return nil }
        stats.evictions.removed &+= 1
        var ignored = Self.none
        return remove(slot: slot, tracking: &ignored).value
    }

    /// Evicts (reason `.capacity`) in eviction order until at most `count` entries and `cost` total cost remain.
    @inlinable
    mutating func trim(toCount count: Int, toCost cost: Int, evicted: inout [Eviction<Key, Value>], collect: Bool) {
        var ignored = Self.none
        while nodes.count > count || totalCost > cost {
            evict(victim(), tracking: &ignored, evicted: &evicted, collect: collect)
        }
    }

    /// Removes every entry (in eviction order, when reported).
    mutating func removeAll(reason: MemoryCacheEvictionReason, evicted: inout [Eviction<Key, Value>], collect: Bool) {
        if collect {
            for list in [probation, protected, window] {
                var slot = list.tail
                while slot != Self.none {
                    let node = nodes[Int(slot)]
                    evicted.append(Eviction(key: node.key, value: node.value, reason: reason))
                    slot = node.prev
                }
            }
        }
        stats.evictions[reason] &+= nodes.count
        buckets = [Int32](repeating: -1, count: 16)
        nodes.removeAll()
        (window, probation, protected) = (List(), List(), List())
        totalCost = 0
    }

    /// Removes every entry whose `expiresAt` is at or before `now`. O(n).
    mutating func removeExpired(now: Int64, evicted: inout [Eviction<Key, Value>], collect: Bool) {
        // Downwards: a removal moves the last node into the hole, and that one has been looked at already.
        var ignored = Self.none
        for slot in stride(from: Int32(truncatingIfNeeded: nodes.count) - 1, through: 0, by: -1)
        where nodes[Int(slot)].expiresAt <= now {
            let node = remove(slot: slot, tracking: &ignored)
            stats.evictions.expired &+= 1
            if collect { evicted.append(Eviction(key: node.key, value: node.value, reason: .expired)) }
        }
    }

    // MARK: - Policy

    /// A use of the entry in `slot`: to the front of its list; in W-TinyLFU, from probation up to protected.
    @inlinable
    mutating func touch(_ slot: Int32) {
        let segment = nodes[Int(slot)].segment
        guard segment == .probation else {
            if self[segment].head != slot {
                unlink(slot)
                link(slot, into: segment)
            }
            return
        }
        unlink(slot)
        link(slot, into: .protected)
        while protected.count > 1 && (protected.count > protectedMaxCount || protected.cost > protectedMaxCost) {
            let demoted = unreferencedTail(.protected)
            unlink(demoted)
            link(demoted, into: .probation)
        }
    }

    /// The next entry to evict when no admission duel applies: probation's LRU, then protected's, then the window's
    /// (each after the deferred uses found at its end are applied).
    @inlinable
    mutating func victim() -> Int32 {
        let fromProbation = unreferencedTail(.probation)
        if fromProbation != Self.none { return fromProbation }
        let fromProtected = unreferencedTail(.protected)
        return fromProtected != Self.none ? fromProtected : unreferencedTail(.window)
    }

    /// The evicting (least recently used) end of `segment`, after every deferred use found there is applied: a
    /// `referenced` entry at the end is unmarked and moved as its hit would have moved it (window and protected: to the
    /// front; probation: up to protected), CLOCK's second chance. Each step clears one mark and only hits set marks,
    /// so this ends, and costs O(1) amortised. With plain LRU nothing is ever marked: this is the tail.
    @inlinable
    mutating func unreferencedTail(_ segment: Segment) -> Int32 {
        while true {
            let tail = self[segment].tail
            guard tail != Self.none, nodes[Int(tail)].referenced else { return tail }
            nodes[Int(tail)].referenced = false
            touch(tail)
        }
    }

    /// Brings the shard back within its limits after an insertion.
    @inlinable
    mutating func evictForLimits(evicted: inout [Eviction<Key, Value>], collect: Bool) {
        var candidate = Self.none
        if admission {
            // The window's overflow joins probation; the oldest of it is the candidate for admission.
            while window.count > 0 && (window.count > windowMaxCount || window.cost > windowMaxCost) {
                let moved = unreferencedTail(.window)
                unlink(moved)
                link(moved, into: .probation)
                if candidate == Self.none { candidate = moved }
            }
            while nodes.count > countLimit || totalCost > costLimit {
                var opponent = unreferencedTail(.probation)
                if candidate != Self.none && opponent == candidate { opponent = nodes[Int(candidate)].next }
                if opponent == Self.none { opponent = unreferencedTail(.protected) }
                if candidate == Self.none || opponent == Self.none || opponent == candidate {
                    evict(victim(), tracking: &candidate, evicted: &evicted, collect: collect)
                } else if sketch.frequency(nodes[Int(candidate)].hash) > sketch.frequency(nodes[Int(opponent)].hash) {
                    evict(opponent, tracking: &candidate, evicted: &evicted, collect: collect)
                } else {
                    evict(candidate, tracking: &candidate, evicted: &evicted, collect: collect)
                    candidate = Self.none
                }
            }
        } else {
            while nodes.count > countLimit || totalCost > costLimit {
                evict(window.tail, tracking: &candidate, evicted: &evicted, collect: collect)
            }
        }
        // Invariant: after every operation the shard is within its share of both limits.
        assert(nodes.count <= countLimit && totalCost <= costLimit)
    }

    @inlinable
    mutating func evict(_ slot: Int32, tracking: inout Int32, evicted: inout [Eviction<Key, Value>], collect: Bool) {
        let node = remove(slot: slot, tracking: &tracking)
        stats.evictions.capacity &+= 1
        if collect { evicted.append(Eviction(key: node.key, value: node.value, reason: .capacity)) }
    }

    // MARK: - List surgery

    @inlinable
    subscript(segment: Segment) -> List {
        get {
            switch segment {
            case .window: window
            case .probation: probation
            case .protected: protected
            }
        }
        set {
            switch segment {
            case .window: window = newValue
            case .probation: probation = newValue
            case .protected: protected = newValue
            }
        }
    }

    /// Puts the unlinked node in `slot` at the head of `segment`.
    @inlinable
    mutating func link(_ slot: Int32, into segment: Segment) {
        var list = self[segment]
        nodes[Int(slot)].segment = segment
        nodes[Int(slot)].prev = Self.none
        nodes[Int(slot)].next = list.head
        if list.head != Self.none { nodes[Int(list.head)].prev = slot } else { list.tail = slot }
        list.head = slot
        list.count += 1
        list.cost += nodes[Int(slot)].cost
        self[segment] = list
    }

    /// Takes the node in `slot` off its list (it stays in `nodes` and the table).
    @inlinable
    mutating func unlink(_ slot: Int32) {
        let segment = nodes[Int(slot)].segment
        var list = self[segment]
        let prev = nodes[Int(slot)].prev, next = nodes[Int(slot)].next
        if prev != Self.none { nodes[Int(prev)].next = next } else { list.head = next }
        if next != Self.none { nodes[Int(next)].prev = prev } else { list.tail = prev }
        list.count -= 1
        list.cost -= nodes[Int(slot)].cost
        self[segment] = list
    }

    /// Deletes the node in `slot`, moving the last node into the hole; `tracking`, a slot the caller holds on to,
    /// follows that move. Returns the deleted node.
    @inlinable
    mutating func remove(slot: Int32, tracking: inout Int32) -> Node {
        unlink(slot)
        erase(bucket: bucket(holding: slot))
        let last = Int32(truncatingIfNeeded: nodes.count - 1)
        if slot != last {
            nodes.swapAt(Int(slot), Int(last))
            // The moved node is still linked by its old slot number: repoint its neighbours (and its list's ends).
            let prev = nodes[Int(slot)].prev, next = nodes[Int(slot)].next
            let segment = nodes[Int(slot)].segment
            if prev != Self.none { nodes[Int(prev)].next = slot } else { self[segment].head = slot }
            if next != Self.none { nodes[Int(next)].prev = slot } else { self[segment].tail = slot }
            buckets[bucket(holding: last, hash: nodes[Int(slot)].hash)] = slot
            if tracking == last { tracking = slot }
        }
        let node = nodes.removeLast()
        totalCost -= node.cost
        return node
    }

    // MARK: - Hash table

    /// The bucket holding `key` and its slot, or the empty bucket where it would go and `-1`.
    @inlinable
    func find(_ key: Key, hash: Int) -> (bucket: Int, slot: Int32) {
        let mask = buckets.count &- 1
        var b = Int(truncatingIfNeeded: HashMix.mix(hash)) & mask
        // Through a buffer pointer: `nodes[s].key` through the array copied the whole node, retaining (and touching
        // the heap object of) its value on every probe.
        return nodes.withUnsafeBufferPointer { nodes in
            while true {
                let s = buckets[b]
                if s < 0 { return (b, -1) }
                if nodes[Int(s)].hash == hash && nodes[Int(s)].key == key { return (b, s) }
                b = (b &+ 1) & mask
            }
        }
    }

    /// The bucket that holds slot number `slot`, whose node has `hash`.
    @inlinable
    func bucket(holding slot: Int32, hash: Int? = nil) -> Int {
        let mask = buckets.count &- 1
        var b = Int(truncatingIfNeeded: HashMix.mix(hash ?? nodes[Int(slot)].hash)) & mask
        while buckets[b] != slot { b = (b &+ 1) & mask }
        return b
    }

    /// Empties `bucket`, shifting later entries of its probe run back so that no lookup stops early.
    @inlinable
    mutating func erase(bucket: Int) {
        let mask = buckets.count &- 1
        var hole = bucket, j = bucket
        while true {
            j = (j &+ 1) & mask
            let s = buckets[j]
            if s < 0 { break }
            let home = Int(truncatingIfNeeded: HashMix.mix(nodes[Int(s)].hash)) & mask
            // The entry may fill the hole unless its home lies cyclically after the hole (within (hole, j]).
            if (j &- home) & mask >= (j &- hole) & mask {
                buckets[hole] = s
                hole = j
            }
        }
        buckets[hole] = -1
    }

    /// Doubles the table and re-places every slot.
    @usableFromInline
    mutating func growTable() {
        buckets = [Int32](repeating: -1, count: buckets.count * 2)
        let mask = buckets.count - 1
        for slot in nodes.indices {
            var b = Int(truncatingIfNeeded: HashMix.mix(nodes[slot].hash)) & mask
            while buckets[b] >= 0 { b = (b + 1) & mask }
            buckets[b] = Int32(truncatingIfNeeded: slot)
        }
    }

    // MARK: - Invariants

    /// Walks the whole shard and traps on any broken invariant. O(n); for tests.
    func checkInvariants() {
        // Invariant: the table holds every slot once and is at most half full.
        let used = buckets.filter { $0 >= 0 }
        precondition(used.count == nodes.count && Set(used).count == used.count, "table and nodes disagree")
        precondition(buckets.count >= 16 && buckets.count & (buckets.count - 1) == 0, "table size not a power of two")
        precondition(nodes.count * 2 <= buckets.count, "table over half full")
        var seen = 0, cost = 0
        for segment in Segment.allCases {
            let list = self[segment]
            var n = 0, listCost = 0, slot = list.head, previous = Self.none
            while slot != Self.none {
                precondition(slot >= 0 && Int(slot) < nodes.count, "link out of range")
                let node = nodes[Int(slot)]
                // Invariant: links are symmetric, the node knows its list, the index points at the node.
                precondition(node.prev == previous, "broken prev link at slot \(slot)")
                precondition(node.segment == segment, "node at slot \(slot) on the wrong list")
                // The node's hash is the one it was set with (`hashValue` or the caller's), so only the
                // table can check it here; the façade checks that it chose this shard.
                precondition(find(node.key, hash: node.hash).slot == slot, "table does not find slot \(slot)")
                // Invariant: no entry costs nothing or more than the cap.
                precondition(node.cost > 0 && node.cost <= maxEntryCost, "entry cost \(node.cost) out of range")
                n += 1
                listCost += node.cost
                precondition(n <= nodes.count, "cycle in a list")
                previous = slot
                slot = node.next
            }
            precondition(list.tail == previous, "tail is not the last node")
            // Invariant: each list's count and cost are exact.
            precondition(n == list.count && listCost == list.cost, "list totals are off")
            seen += n
            cost += listCost
        }
        // Invariant: every node is on exactly one list, the cost sum is exact.
        precondition(seen == nodes.count, "lists hold \(seen) nodes, array \(nodes.count)")
        precondition(cost == totalCost, "cost sum \(cost) != totalCost \(totalCost)")
        // Invariant: plain LRU uses only the window list.
        if !admission { precondition(probation.count == 0 && protected.count == 0, "LRU with main lists") }
        // Invariant: within this shard's share of both limits.
        precondition(nodes.count <= countLimit && totalCost <= costLimit, "shard over its limits")
    }

    /// Keys in eviction order reversed: window, protected, probation, each from most to least recently placed (for
    /// plain LRU: the LRU list). W-TinyLFU hits not yet applied (marked entries) do not show. O(n); for tests.
    func keysByRecency() -> [Key] {
        var keys: [Key] = []
        for list in [window, protected, probation] {
            var slot = list.head
            while slot != Self.none {
                keys.append(nodes[Int(slot)].key)
                slot = nodes[Int(slot)].next
            }
        }
        return keys
    }
}
