import Locking
import Synchronization

/// A Bloom filter over the key hashes of every entry a writable store may hold, so that a miss
/// (the lookup of a URL never stored) is answered without the memory tier or LMDB.
///
/// A key hash is the 16-byte prefix of the entry's LMDB key (`Checksum.key`, XXH3-128 of the
/// cache key). The filter is *blocked*: a key's low 64 bits pick one 64-byte block, and its high
/// 64 bits set one bit in each of the block's eight 64-bit words, so a probe reads one cache
/// line. Sixteen bits per key (a table is sized for twice the keys it is built from) give about
/// 0.1% false positives at its design load.
///
/// Invariant (what makes `mayContain == false` mean "absent"): from the moment a table is
/// published, every key in LMDB or in the pending index has its bits set in it. A table is
/// built from the pending index's keys (under its lock, `beginRebuild`) and one LMDB snapshot
/// taken after that; every put the pending index records meanwhile sets its bits in both the
/// published table and the one being built (`insert`, under the same lock). Bits are never
/// cleared in a published table: a removed key only costs a false positive until the next
/// rebuild, which starts once more keys were inserted than the table was sized for.
///
/// Only a writable store keeps one: it is the only writer of its LMDB file while it holds the
/// writer lock. A read-only store (another process may write) never consults one.
package final class KeyFilter: Sendable {
    /// The table readers probe: the address of an unretained `Table` (which `state` keeps
    /// alive), or 0 until the first build is published. An `Int`: a pointer is not `Sendable`.
    private let published = Atomic<Int>(0)
    /// Bumped before a retired table is cleared for reuse. A probe that finds a bit clear reads it
    /// again after its probe: if it moved, the table may have been cleared under it (a seqlock).
    private let clears = Atomic<UInt64>(0)
    private let state = LockedValue(State())
    /// The fewest keys a table is sized for.
    private let minimumKeys: Int

    /// A filter with no table yet (every key "may" be there) whose tables are sized for at
    /// least `minimumKeys` keys.
    package init(minimumKeys: Int = KeyFilter.defaultMinimumKeys) {
        self.minimumKeys = max(1, minimumKeys)
    }

    private struct State: @unchecked Sendable {
        // @unchecked Sendable: the tables are only reached through atomics (their words) or
        // under this lock (the list); `Table` itself is immutable apart from its atomic words.
        /// Every table ever made, kept until the filter goes: a reader may still hold a retired
        /// one. At most two of each size (the published one and the one being rebuilt), reused.
        var tables: [Table] = []
        var current: Table?
        /// The table a rebuild fills; nil when none runs.
        var next: Table?
        /// Keys inserted into `current` since it was built, counting the build's own.
        var inserted = 0
        /// Tables published so far.
        var builds = 0
        /// Keys inserted since the filter was made (into any table, or none yet).
        var insertions = 0
        /// `insertions` when the last rebuild failed: the next waits until as many more went in
        /// (at least `minimumKeys`), so a store whose scan keeps failing is not rescanned after
        /// every applied batch.
        var failedAt: Int?
    }

    /// Whether `hash` (a key hash, at least 16 bytes) may be in the store. False means the key is
    /// in neither LMDB nor the pending index; true when it may be, or when no table is built yet.
    /// Lock-free: an atomic load, one cache line, and on a "no" one more load.
    @inline(__always)
    package func mayContain(_ hash: UnsafeRawBufferPointer) -> Bool { mayContain(Key(hash)) }

    /// `mayContain` for a hash already computed.
    @inline(__always)
    package func mayContain(_ hash: KeyHash) -> Bool { mayContain(Key(hash)) }

    @inline(__always)
    private func mayContain(_ key: Key) -> Bool {
        let clearsBefore = clears.load(ordering: .acquiring)
        guard let raw = UnsafeMutableRawPointer(bitPattern: published.load(ordering: .acquiring)) else { return true }
        let present = Unmanaged<Table>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.mayContain(key) }
        if present { return true }
        // Seqlock read side: a zero this probe read from a table being cleared for reuse is
        // ordered before the counter's bump by this fence, so the counter shows the bump.
        atomicMemoryFence(ordering: .acquiring)
        return clears.load(ordering: .relaxed) != clearsBefore
    }

    /// Sets `hash`'s bits in the published table and in the one being rebuilt. Called by the
    /// pending index under its lock, before the change it records becomes visible.
    package func insert(_ hash: UnsafeRawBufferPointer) {
        let key = Key(hash)
        state.withLock { state in
            state.next?.insert(key)
            state.insertions += 1
            if let current = state.current {
                current.insert(key)
                state.inserted += 1
            }
        }
    }

    /// Whether the published table holds more keys than it was sized for (or none is built):
    /// time to rebuild it from the keys the store holds now.
    package var wantsRebuild: Bool {
        state.withLock { state in
            if let failedAt = state.failedAt, state.insertions < failedAt + max(failedAt, minimumKeys) { return false }
            guard let current = state.current else { return state.next == nil }
            return state.inserted > current.designKeys
        }
    }

    /// Starts a rebuild sized for `expectedKeys`, and returns the table to fill; nil when one is
    /// already running. Call it under the pending index's lock, then insert the pending keys,
    /// then every key of one LMDB snapshot taken after this returns, then `finishRebuild`.
    package func beginRebuild(expectedKeys: Int) -> Table? {
        let blocks = Table.blockCount(forKeys: max(minimumKeys, expectedKeys > Int.max / 2 ? Int.max : expectedKeys * 2))
        return state.withLock { state in
            guard state.next == nil else { return nil }
            let table: Table
            if let spare = state.tables.first(where: { $0.blocks == blocks && $0 !== state.current }) {
                // A retired table: readers that still probe it see the counter move (seqlock write side).
                clears.wrappingAdd(1, ordering: .acquiringAndReleasing)
                atomicMemoryFence(ordering: .releasing)
                spare.clear()
                table = spare
            } else {
                table = Table(blocks: blocks)
                state.tables.append(table)
            }
            state.next = table
            return table
        }
    }

    /// Publishes the table `beginRebuild` returned, holding `keys` keys (the build's own).
    package func finishRebuild(keys: Int) {
        state.withLock { state in
            guard let next = state.next else { return }
            state.current = next
            state.next = nil
            state.inserted = keys
            state.builds += 1
            state.failedAt = nil
            published.store(Int(bitPattern: Unmanaged.passUnretained(next).toOpaque()), ordering: .releasing)
        }
    }

    /// Drops a rebuild that failed; the published table (if any) stays, complete. The next
    /// is wanted only once as many keys again went in (`State.failedAt`).
    package func abandonRebuild() {
        state.withLock { state in
            state.next = nil
            state.failedAt = state.insertions
        }
    }

    /// How many tables were published (tests): 0 until the first build.
    package var builds: Int { state.withLock { $0.builds } }

    /// How many tables were ever allocated, and their bytes (tests: retired tables are reused).
    package var allocated: (tables: Int, bytes: Int) {
        state.withLock { state in (state.tables.count, state.tables.reduce(0) { $0 + $1.blocks * 64 }) }
    }

    /// The fewest keys a table is sized for by default: 64 KiB of bits.
    package static let defaultMinimumKeys = 1 << 15

    /// A key hash's two halves, read little-endian.
    package struct Key {
        let block: UInt64
        let bits: UInt64
        @inline(__always)
        package init(_ hash: UnsafeRawBufferPointer) {
            // Invariant: a key hash is 16 bytes (`StoreFormat.hashByteCount`).
            precondition(hash.count >= 16, "a key hash has 16 bytes")
            block = UInt64(littleEndian: hash.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
            bits = UInt64(littleEndian: hash.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }

        /// The same key as from `hash`'s 16 bytes.
        @inline(__always)
        package init(_ hash: KeyHash) {
            block = UInt64(littleEndian: hash.first)
            bits = UInt64(littleEndian: hash.second)
        }
    }

    /// One filter's bits: `blocks` blocks (a power of two) of eight atomic 64-bit words.
    package final class Table: Sendable {
        package let blocks: Int
        // nonisolated(unsafe): allocated once in init and freed in deinit; every word is read and
        // written only through its atomic.
        nonisolated(unsafe) private let words: UnsafeMutablePointer<Atomic<UInt64>>

        init(blocks: Int) {
            self.blocks = blocks
            let raw = UnsafeMutableRawPointer.allocate(byteCount: blocks * 64, alignment: 64)
            words = raw.bindMemory(to: Atomic<UInt64>.self, capacity: blocks * 8)
            for index in 0..<blocks * 8 { (words + index).initialize(to: Atomic(0)) }
        }

        deinit { UnsafeMutableRawPointer(words).deallocate() }

        /// Keys the table is sized for: 16 bits each.
        package var designKeys: Int { blocks * 32 }

        static func blockCount(forKeys keys: Int) -> Int {
            var blocks = 1
            while blocks * 32 < keys && blocks < 1 << 40 { blocks <<= 1 }
            return blocks
        }

        /// The eight odd multipliers that spread a key's high half over the block's words (those
        /// of the split-block Bloom filter, widened to 64 bits).
        private static let salts: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (
            0x47b6_137b_4497_4d91, 0x8824_ad5b_a2b7_289d, 0x7054_95c7_2df1_424b, 0x9efc_4947_5c6b_fb31,
            0x8f2d_b8b3_6d1d_4a95, 0x2e8b_1b1b_3f0a_9d7d, 0x5c6b_fb31_9efc_4947, 0xa2b7_289d_8824_ad5b)

        @inline(__always)
        private func words(of key: Key) -> UnsafeMutablePointer<Atomic<UInt64>> {
            words + Int(truncatingIfNeeded: key.block & UInt64(blocks - 1)) * 8
        }

        @inline(__always)
        private static func mask(_ key: Key, _ salt: UInt64) -> UInt64 { 1 &<< ((key.bits &* salt) &>> 58) }

        @inline(__always)
        func mayContain(_ key: Key) -> Bool {
            let block = words(of: key)
            let s = Self.salts
            return block[0].load(ordering: .relaxed) & Self.mask(key, s.0) != 0
                && block[1].load(ordering: .relaxed) & Self.mask(key, s.1) != 0
                && block[2].load(ordering: .relaxed) & Self.mask(key, s.2) != 0
                && block[3].load(ordering: .relaxed) & Self.mask(key, s.3) != 0
                && block[4].load(ordering: .relaxed) & Self.mask(key, s.4) != 0
                && block[5].load(ordering: .relaxed) & Self.mask(key, s.5) != 0
                && block[6].load(ordering: .relaxed) & Self.mask(key, s.6) != 0
                && block[7].load(ordering: .relaxed) & Self.mask(key, s.7) != 0
        }

        func insert(_ key: Key) {
            let block = words(of: key)
            let s = Self.salts
            block[0].bitwiseOr(Self.mask(key, s.0), ordering: .relaxed)
            block[1].bitwiseOr(Self.mask(key, s.1), ordering: .relaxed)
            block[2].bitwiseOr(Self.mask(key, s.2), ordering: .relaxed)
            block[3].bitwiseOr(Self.mask(key, s.3), ordering: .relaxed)
            block[4].bitwiseOr(Self.mask(key, s.4), ordering: .relaxed)
            block[5].bitwiseOr(Self.mask(key, s.5), ordering: .relaxed)
            block[6].bitwiseOr(Self.mask(key, s.6), ordering: .relaxed)
            block[7].bitwiseOr(Self.mask(key, s.7), ordering: .relaxed)
        }

        package func insert(_ hash: UnsafeRawBufferPointer) { insert(Key(hash)) }

        fileprivate func clear() {
            for index in 0..<blocks * 8 { words[index].store(0, ordering: .relaxed) }
        }
    }
}
