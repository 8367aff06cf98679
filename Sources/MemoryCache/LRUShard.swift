import Synchronization

/// One lock and one exact LRU over the keys that hash to it.
///
/// A class so that every shard's lock lives in its own allocation; the trailing padding keeps two shards' hot words
/// off one cache line (two cores hammering neighbouring shards would otherwise still ping-pong that line).
@usableFromInline
final class LRUShard<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    // Guarded by itself: everything mutable in a shard is inside this mutex.
    @usableFromInline let state: Mutex<LRUState<Key, Value>>
    @usableFromInline let sanitizer = ThreadSanitizerAnnotations()
    private let padding: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) = (0, 0, 0, 0, 0, 0, 0, 0)

    init(countLimit: Int, costLimit: Int, maxEntryCost: Int) {
        state = Mutex(LRUState(countLimit: countLimit, costLimit: costLimit, maxEntryCost: maxEntryCost))
    }

    /// Runs `body` with the shard's state locked. Every access to the state goes through here.
    @inlinable
    func withLock<R>(_ body: (inout LRUState<Key, Value>) -> R) -> R {
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

/// An exact LRU list: a dictionary from key to slot, and the entries in one dense array linked into a doubly linked
/// list by `Int32` slot numbers (no per-entry allocation). A removed slot is filled by moving the last entry into it,
/// so `nodes` never has holes and needs no optional payload.
///
/// Only ever touched inside its shard's `Mutex`; every method is O(1) except `removeAll`, `removeExpired` and the
/// invariant check.
@usableFromInline
struct LRUState<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    @usableFromInline
    struct Node: Sendable {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
        @usableFromInline var cost: Int
        /// Milliseconds since the epoch; `Int64.max` = never.
        @usableFromInline var expiresAt: Int64
        /// Towards the most recently used end; `-1` at the head.
        @usableFromInline var prev: Int32
        /// Towards the least recently used end; `-1` at the tail.
        @usableFromInline var next: Int32

        @inlinable init(key: Key, value: Value, cost: Int, expiresAt: Int64, prev: Int32, next: Int32) {
            self.key = key
            self.value = value
            self.cost = cost
            self.expiresAt = expiresAt
            self.prev = prev
            self.next = next
        }
    }

    @usableFromInline static var none: Int32 { -1 }

    @usableFromInline var index: [Key: Int32] = [:]
    @usableFromInline var nodes: ContiguousArray<Node> = []
    /// Most recently used.
    @usableFromInline var head: Int32 = -1
    /// Least recently used: the next victim.
    @usableFromInline var tail: Int32 = -1
    @usableFromInline var totalCost = 0
    /// This shard's share of the limits; `Int.max` when unlimited.
    @usableFromInline var countLimit: Int
    @usableFromInline var costLimit: Int
    /// The larger cost this shard refuses (min of the configured cap and `costLimit`).
    @usableFromInline var maxEntryCost: Int
    @usableFromInline var stats = MemoryCacheStatistics()

    init(countLimit: Int, costLimit: Int, maxEntryCost: Int) {
        self.countLimit = countLimit
        self.costLimit = costLimit
        self.maxEntryCost = maxEntryCost
    }

    // MARK: - Operations

    /// Looks `key` up; a hit becomes the most recently used, an expired entry is removed.
    @inlinable
    mutating func value(forKey key: Key, now: () -> Int64) -> Lookup<Key, Value> {
        guard let slot = index[key] else {
            stats.misses &+= 1
            return .miss
        }
        let expiresAt = nodes[Int(slot)].expiresAt
        if expiresAt != .max && expiresAt <= now() {
            let node = remove(slot: slot)
            stats.misses &+= 1
            stats.evictions.expired &+= 1
            return .expired(node.key, node.value)
        }
        stats.hits &+= 1
        moveToFront(slot)
        return .hit(nodes[Int(slot)].value)
    }

    /// Inserts or overwrites `key` as the most recently used entry, then evicts from the LRU end until the limits hold.
    /// An entry over the cost cap, or already expired at `now`, is refused and any older value under `key` dropped
    /// (so the cache never serves a value older than the last `set`).
    @inlinable
    mutating func set(
        _ value: Value, forKey key: Key, cost: Int, expiresAt: Int64, now: Int64?,
        evicted: inout [Eviction<Key, Value>], collect: Bool
    ) {
        let refusal: MemoryCacheEvictionReason? =
            cost > maxEntryCost ? .costCap : (now.map { expiresAt <= $0 } ?? false) ? .expired : nil
        if let refusal {
            if let slot = index[key] { _ = remove(slot: slot) }
            stats.evictions[refusal] &+= 1
            if collect { evicted.append(Eviction(key: key, value: value, reason: refusal)) }
            return
        }
        let newSlot = Int32(truncatingIfNeeded: nodes.count)
        if let slot = index.updateValue(newSlot, forKey: key) {
            // Overwrite in place: undo the speculative index entry (one extra hash, only on overwrites).
            index[key] = slot
            totalCost += cost - nodes[Int(slot)].cost
            nodes[Int(slot)].value = value
            nodes[Int(slot)].cost = cost
            nodes[Int(slot)].expiresAt = expiresAt
            moveToFront(slot)
        } else {
            nodes.append(Node(key: key, value: value, cost: cost, expiresAt: expiresAt, prev: Self.none, next: head))
            if head != Self.none { nodes[Int(head)].prev = newSlot } else { tail = newSlot }
            head = newSlot
            totalCost += cost
        }
        stats.insertions &+= 1
        trim(toCount: countLimit, toCost: costLimit, evicted: &evicted, collect: collect)
    }

    /// Removes `key`, returning its value.
    @inlinable
    mutating func removeValue(forKey key: Key) -> Value? {
        guard let slot = index[key] else { return nil }
        stats.evictions.removed &+= 1
        return remove(slot: slot).value
    }

    /// Evicts least recently used entries until at most `count` entries and `cost` total cost remain.
    @inlinable
    mutating func trim(toCount count: Int, toCost cost: Int, evicted: inout [Eviction<Key, Value>], collect: Bool) {
        while nodes.count > count || totalCost > cost {
            let node = remove(slot: tail)
            stats.evictions.capacity &+= 1
            if collect { evicted.append(Eviction(key: node.key, value: node.value, reason: .capacity)) }
        }
        // Invariant: after every operation the shard is within its share of both limits.
        assert(nodes.count <= countLimit && totalCost <= costLimit)
    }

    /// Removes every entry, least recently used first.
    mutating func removeAll(reason: MemoryCacheEvictionReason, evicted: inout [Eviction<Key, Value>], collect: Bool) {
        if collect {
            var slot = tail
            while slot != Self.none {
                let node = nodes[Int(slot)]
                evicted.append(Eviction(key: node.key, value: node.value, reason: reason))
                slot = node.prev
            }
        }
        stats.evictions[reason] &+= nodes.count
        index.removeAll()
        nodes.removeAll()
        head = Self.none
        tail = Self.none
        totalCost = 0
    }

    /// Removes every entry whose `expiresAt` is at or before `now`. O(n).
    mutating func removeExpired(now: Int64, evicted: inout [Eviction<Key, Value>], collect: Bool) {
        var slot = tail
        while slot != Self.none {
            let node = nodes[Int(slot)]
            var previous = node.prev
            if node.expiresAt <= now {
                // Removing moves the last node into `slot`; if that was the one we visit next, follow it.
                if previous == Int32(nodes.count - 1) { previous = slot }
                _ = remove(slot: slot)
                stats.evictions.expired &+= 1
                if collect { evicted.append(Eviction(key: node.key, value: node.value, reason: .expired)) }
            }
            slot = previous
        }
    }

    // MARK: - List surgery

    @inlinable
    mutating func unlink(_ slot: Int32) {
        let prev = nodes[Int(slot)].prev, next = nodes[Int(slot)].next
        if prev != Self.none { nodes[Int(prev)].next = next } else { head = next }
        if next != Self.none { nodes[Int(next)].prev = prev } else { tail = prev }
    }

    @inlinable
    mutating func moveToFront(_ slot: Int32) {
        guard slot != head else { return }
        unlink(slot)
        nodes[Int(slot)].prev = Self.none
        nodes[Int(slot)].next = head
        nodes[Int(head)].prev = slot  // the list has ≥ 2 nodes here, so after the unlink `head` is a real node
        head = slot
    }

    /// Unlinks and deletes the node in `slot`, moving the last node into the hole. Returns the deleted node.
    @inlinable
    mutating func remove(slot: Int32) -> Node {
        unlink(slot)
        let removedKey = nodes[Int(slot)].key
        index[removedKey] = nil
        let last = Int32(truncatingIfNeeded: nodes.count - 1)
        if slot != last {
            nodes.swapAt(Int(slot), Int(last))
            // The moved node is still linked by its old slot number: repoint its neighbours (and the ends) at `slot`.
            let prev = nodes[Int(slot)].prev, next = nodes[Int(slot)].next
            if prev != Self.none { nodes[Int(prev)].next = slot } else { head = slot }
            if next != Self.none { nodes[Int(next)].prev = slot } else { tail = slot }
            index[nodes[Int(slot)].key] = slot
        }
        let node = nodes.removeLast()
        totalCost -= node.cost
        return node
    }

    // MARK: - Invariants

    /// Walks the whole shard and traps on any broken invariant. O(n); for tests.
    func checkInvariants() {
        // Invariant: the index and the node array describe the same entries.
        precondition(index.count == nodes.count, "index has \(index.count) keys, nodes \(nodes.count)")
        var seen = 0, cost = 0, slot = head, previous = Self.none
        while slot != Self.none {
            precondition(slot >= 0 && Int(slot) < nodes.count, "link out of range")
            let node = nodes[Int(slot)]
            // Invariant: links are symmetric and the index points at the node holding the key.
            precondition(node.prev == previous, "broken prev link at slot \(slot)")
            precondition(index[node.key] == slot, "index disagrees with slot \(slot)")
            // Invariant: no entry costs nothing or more than the cap.
            precondition(node.cost > 0 && node.cost <= maxEntryCost, "entry cost \(node.cost) out of range")
            seen += 1
            cost += node.cost
            precondition(seen <= nodes.count, "cycle in the LRU list")
            previous = slot
            slot = node.next
        }
        // Invariant: every node is on the list exactly once, the tail is the last one, the cost sum is exact.
        precondition(seen == nodes.count, "list has \(seen) nodes, array \(nodes.count)")
        precondition(tail == previous, "tail is not the last node")
        precondition(cost == totalCost, "cost sum \(cost) != totalCost \(totalCost)")
        // Invariant: within this shard's share of both limits.
        precondition(nodes.count <= countLimit && totalCost <= costLimit, "shard over its limits")
    }

    /// Keys from most to least recently used. O(n); for tests.
    func keysByRecency() -> [Key] {
        var keys: [Key] = []
        var slot = head
        while slot != Self.none {
            keys.append(nodes[Int(slot)].key)
            slot = nodes[Int(slot)].next
        }
        return keys
    }
}
