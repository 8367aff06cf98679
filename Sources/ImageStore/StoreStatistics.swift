/// A store's size and activity, as returned by `ImageStore.statistics()`.
public struct StoreStatistics: Sendable, Hashable, Codable {
    /// Entries in the store (expired ones not yet removed included).
    public var entryCount: Int
    /// The sum of all entries' image sizes.
    public var logicalBytes: Int
    /// Disk space `data.mdb` occupies (allocated blocks).
    public var fileBytes: Int
    /// Bytes of LMDB pages in use (up to the last page written).
    public var usedBytes: Int
    /// The current LMDB map size.
    public var mapSize: Int
    /// The map size the store may grow to.
    public var maxMapSize: Int
    /// Successful puts by this process since it opened the store.
    public var puts: Int
    /// Gets that returned an image, by this process.
    public var hits: Int
    /// Gets that found nothing, by this process.
    public var misses: Int
    /// Reads refused because the bytes did not match their checksum, by this process.
    public var corruptReads: Int
    /// Entries past their expiry that the sweeper has not removed yet (read as absent).
    public var expiredEntries: Int
    /// Image bytes of those expired entries; `logicalBytes - expiredBytes` are fresh.
    public var expiredBytes: Int
    /// Bytes of LMDB pages holding data (in use, neither on the free list nor the free list's own
    /// pages): what the disk budget counts, less the quarantine's pages, which it leaves out.
    public var occupiedBytes: Int
    /// The disk budget, if any (`Configuration.maxDiskBytes`).
    public var maxDiskBytes: Int?
    /// Entries removed because they expired (sweeps), by this process.
    public var expiredEvictions: Int
    /// Entries removed to hold the disk budget, by this process.
    public var budgetEvictions: Int
    /// Entries and image bytes in the memory tier now, and its byte limit (0 when off).
    public var memoryEntries: Int
    public var memoryBytes: Int
    public var memoryCostLimit: Int
    /// Reads the memory tier answered, and reads it did not, by this process. A read of a URL
    /// the key filter knows the store never held ends before the memory tier: it counts in
    /// `misses`, not here.
    public var memoryHits: Int
    public var memoryMisses: Int
    /// Entries the memory tier dropped for its limits (not for invalidation).
    public var memoryEvictions: Int
}
