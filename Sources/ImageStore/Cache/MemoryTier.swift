import Foundation
import MemoryCache
import Synchronization

/// The memory tier in front of the durable tier: decoded entries (record and bytes) by cache
/// key, in a `MemoryCache` with count and byte limits.
///
/// Coherence: the memory tier never serves bytes older than the durable tier's. It is filled
/// only from LMDB reads, and every change to LMDB (applied puts and deletes, sweeps,
/// evictions) invalidates the keys it touched right after its transaction commits. A read that
/// fills the tier checks a generation counter that every invalidation bumps: if anything was
/// invalidated while it read LMDB, its fill is withdrawn, so an old read cannot outlive the
/// invalidation that raced with it. Until the log applier reaches LMDB, the pending index
/// (consulted first) shadows the memory tier.
final class MemoryTier: Sendable {
    struct Entry: Sendable {
        var record: EntryRecord
        var data: Data
    }

    private let cache: MemoryCache<String, Entry>
    private let generation = Atomic<UInt64>(0)
    private let fillHook: (@Sendable (MemoryFillPhase, String) -> Void)?

    /// A memory tier with the configuration's limits, or nil when it is turned off.
    init?(_ configuration: ImageStore.Configuration) {
        guard configuration.memoryCostLimit > 0 else { return nil }
        let clock = configuration.clock
        fillHook = configuration.memoryFillHook
        cache = MemoryCache(configuration: .init(
            countLimit: configuration.memoryCountLimit, totalCostLimit: configuration.memoryCostLimit,
            maxEntryCost: configuration.memoryMaxEntryBytes,
            now: { Int64((clock().timeIntervalSince1970 * 1000).rounded(.down)) }))
    }

    func entry(_ cacheKey: String) -> Entry? { cache.value(forKey: cacheKey) }

    /// The generation to pass to `fill` after reading LMDB.
    var currentGeneration: UInt64 { generation.load(ordering: .acquiring) }

    /// Keeps an entry read from LMDB, unless something was invalidated since `generation`.
    /// Sliding entries are kept without an expiry (the store checks theirs on every hit).
    func fill(_ entry: Entry, readAt generation: UInt64) {
        let cost = entry.data.count
        guard cost > 0 else { return }
        fillHook?(.beforeInsert, entry.record.cacheKey)
        cache.set(entry, forKey: entry.record.cacheKey, cost: cost,
                  expiresAt: entry.record.slidingSeconds > 0 ? nil : entry.record.expiresAt)
        fillHook?(.afterInsert, entry.record.cacheKey)
        if self.generation.load(ordering: .acquiring) != generation {
            cache.removeValue(forKey: entry.record.cacheKey)
        }
    }

    /// Drops `cacheKeys` after LMDB changed them.
    func invalidate(_ cacheKeys: some Sequence<String>) {
        generation.add(1, ordering: .acquiringAndReleasing)
        for key in cacheKeys { cache.removeValue(forKey: key) }
    }

    /// Drops everything (after a remove-all).
    func invalidateAll() {
        generation.add(1, ordering: .acquiringAndReleasing)
        cache.removeAll()
    }

    var statistics: MemoryCacheStatistics { cache.statistics }
}
