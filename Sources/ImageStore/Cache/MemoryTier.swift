import Foundation
import Locking
import MemoryCache
import Synchronization

/// The memory tier in front of the durable tier: decoded entries (record and bytes) by cache
/// key, in a `MemoryCache` with count and byte limits.
///
/// Coherence: the memory tier never serves bytes older than the durable tier's. It is filled
/// only from LMDB reads, and every change to LMDB (applied puts and deletes, sweeps,
/// evictions) invalidates the keys it touched right after its transaction commits. A read that
/// fills the tier checks a generation counter that every invalidation bumps: if anything was
/// invalidated while it read LMDB, it inserts nothing (the check and the insert are one step
/// under the shared side of a lock whose exclusive side the bump takes), so an old read is
/// never visible after the invalidation that raced with it.
/// Until the log applier reaches LMDB, the pending index (consulted first) shadows the memory
/// tier.
final class MemoryTier: Sendable {
    /// One cached entry: what the durable tier's read returned (`DecodedEntry`).
    typealias Entry = DecodedEntry

    /// Keyed by cache key, hashed by `cacheHash` of its `KeyHash` (the cache's `hash:`
    /// variants throughout): a read computes the key's hash once for the key filter, this tier
    /// and LMDB, and the cache hashes no string.
    private let cache: MemoryCache<String, Entry>
    /// The largest entry (in image bytes) the tier keeps (`Configuration.memoryMaxEntryBytes`).
    let maxEntryBytes: Int
    /// Mixed into both words of every key's hash (`cacheHash`): XXH3 is a fixed function, so
    /// without a secret whoever picks the URLs could pick ones that crowd one shard's table.
    private let seed = UInt64.random(in: .min ... .max)
    private let oddSeed = UInt64.random(in: .min ... .max) | 1
    /// The store's key hasher when a test replaced it (`Configuration.keyHasher`), so a key's
    /// hash here is the one the read path computes for the key filter and LMDB.
    private let customKeyHasher: (@Sendable (String) -> [UInt8])?
    /// Bumped by every invalidation, only under `fillGate`'s exclusive side. Read without it
    /// (`currentGeneration`, by every disk read) and under its shared side (`fill`).
    private let generation = Atomic<UInt64>(0)
    /// Fills hold it shared, so they do not exclude one another (each is a `MemoryCache.set`,
    /// which locks only its shard); a bump holds it exclusively (see `bumpGeneration`).
    private let fillGate = SharedLock()
    private let fillHook: (@Sendable (MemoryFillPhase, String) -> Void)?
    /// The LMDB commit a read-only store's tier last emptied itself for (`follow`); unused by a
    /// writable store, whose own writes invalidate their keys.
    private let followedCommit = Atomic<UInt64>(0)

    /// A memory tier with the configuration's limits, or nil when it is turned off: no cost
    /// budget (`memoryCostLimit` 0), or no image small enough to keep (`memoryMaxEntryBytes` 0).
    /// - Throws: `invalidArgument` naming the field, for a limit `Configuration.validate()`
    ///   should have refused (the memory cache checks its own configuration too).
    init?(_ configuration: ImageStore.Configuration) throws(ImageStoreError) {
        guard configuration.memoryCostLimit > 0, configuration.memoryMaxEntryBytes > 0 else { return nil }
        let clock = configuration.clock
        fillHook = configuration.memoryFillHook
        maxEntryBytes = configuration.memoryMaxEntryBytes
        customKeyHasher = configuration.keyHasher
        do {
            cache = try MemoryCache(configuration: .init(
                countLimit: configuration.memoryCountLimit, totalCostLimit: configuration.memoryCostLimit,
                maxEntryCost: configuration.memoryMaxEntryBytes,
                now: { Int64((clock().timeIntervalSince1970 * 1000).rounded(.down)) }))
        } catch {
            switch error {
            case let .invalidArgument(name, value, expected):
                throw .invalidArgument(name: "the memory tier's \(name)", value: "\(value)", allowed: expected)
            }
        }
    }

    /// The memory cache's hash of a key whose `KeyHash` is `hash`: both words, each mixed with a
    /// secret, so two keys collide here only when their whole 128-bit hashes do (or by chance).
    @inline(__always)
    private func cacheHash(_ hash: KeyHash) -> Int {
        Int(bitPattern: UInt((hash.first ^ seed) &+ hash.second &* oddSeed))
    }

    /// The entry for `cacheKey` (whose `KeyHash` is `hash`) at `now` (milliseconds of the
    /// store's clock, which the cache's is): one clock read per get, the store's.
    func entry(_ cacheKey: String, hash: KeyHash, at now: Int64) -> Entry? {
        cache.value(forKey: cacheKey, hash: cacheHash(hash), at: now)
    }

    /// The entry for `cacheKey` (whose `KeyHash` is `hash`), with `now` (milliseconds of the
    /// store's clock) called only when the cache holds an entry with an expiry for it, inside the
    /// cache's lock: a miss reads no clock. The cache drops an entry expired at `now`, so `now` must not be later than the
    /// read's time; the store passes `ReadClock.notAfterNow` and checks freshness itself.
    func entry(_ cacheKey: String, hash: KeyHash, now: () -> Int64) -> Entry? {
        cache.value(forKey: cacheKey, hash: cacheHash(hash), now: now)
    }

    /// The generation to pass to `fill` after reading LMDB.
    var currentGeneration: UInt64 { generation.load(ordering: .acquiring) }

    /// Keeps an entry read from LMDB, unless something was invalidated since `generation`.
    /// `hash` is the entry's `KeyHash`, as the read computed it.
    /// Sliding entries are kept without an expiry (the store checks theirs on every hit).
    ///
    /// The check and the insert are one step under `fillGate`'s shared side, so an entry older
    /// than an invalidation is never visible, not even for a moment. (Inserting first and
    /// withdrawing it after a failed check let a writer, whose put had just left the pending
    /// index, read the older bytes back.)
    func fill(_ entry: Entry, hash: KeyHash, readAt generation: UInt64) {
        let cost = entry.data.count
        guard cost > 0 else { return }
        let hash = cacheHash(hash)
        fillHook?(.beforeInsert, entry.record.cacheKey)
        fillGate.shared {
            // Invalidated while it read LMDB, or read from a snapshot older than the commit a
            // read-only store followed (see `follow`). Relaxed: the gate orders both loads after
            // any bump.
            guard self.generation.load(ordering: .relaxed) == generation,
                  entry.transaction >= followedCommit.load(ordering: .relaxed) else { return }
            // `set` refuses only a cost below 1, and `cost > 0` here; an entry not cached is
            // never wrong (the next read goes to LMDB), so there is nothing to report.
            do {
                try cache.set(entry, forKey: entry.record.cacheKey, hash: hash, cost: cost,
                              expiresAt: entry.record.slidingSeconds > 0 ? nil : entry.record.expiresAt)
            } catch {
                assertionFailure("MemoryCache.set refused a positive cost: \(error)")
            }
        }
        fillHook?(.afterInsert, entry.record.cacheKey)
    }

    /// Drops `cacheKeys` after LMDB changed them.
    func invalidate(_ cacheKeys: some Sequence<String>) {
        bumpGeneration()
        for key in cacheKeys {
            cache.removeValue(forKey: key, hash: cacheHash(KeyHash(key, customHasher: customKeyHasher)))
        }
    }

    /// Drops everything (after a remove-all).
    func invalidateAll() {
        bumpGeneration()
        cache.removeAll()
    }

    /// For a read-only store, whose writer is another process that cannot invalidate keys here:
    /// drops everything when LMDB's last commit is no longer the one the tier last saw, so an
    /// entry is never served after the writer changed it in LMDB. Called before every memory
    /// lookup of such a store. Each commit of the writer thus empties the tier once.
    ///
    /// Invariant: `followedCommit` is stored only after the tier was emptied (under
    /// `fillGate`'s exclusive side), so a reader that sees the new commit finds no entry kept
    /// before it; and a fill that read LMDB before the commit holds an older generation, so it
    /// inserts nothing. LMDB reports a commit (`mdb_env_info`, from the meta page) before new
    /// read transactions get it (the lock region's ID is set after the meta page's write), so a
    /// read that began after this call can still read the snapshot before `transaction`: a fill
    /// also inserts nothing read from a snapshot older than `followedCommit`.
    func follow(committedTransaction transaction: UInt64) {
        guard followedCommit.load(ordering: .acquiring) != transaction else { return }
        fillGate.exclusive {
            guard followedCommit.load(ordering: .relaxed) != transaction else { return }
            generation.add(1, ordering: .releasing)
            cache.removeAll()
            followedCommit.store(transaction, ordering: .releasing)
        }
    }

    /// Fails every fill that read LMDB before now. Callers drop their keys after this.
    ///
    /// Invariant: a fill inserts only under `fillGate`'s shared side, after seeing an unchanged
    /// generation, and this bump holds the exclusive side. So a fill either holds the gate before
    /// this bump (its insert is done, and the removal that follows drops it) or after it (it sees
    /// the bump and inserts nothing).
    private func bumpGeneration() {
        fillGate.exclusive { _ = generation.add(1, ordering: .releasing) }
    }

    var statistics: MemoryCacheStatistics { cache.statistics }
}
