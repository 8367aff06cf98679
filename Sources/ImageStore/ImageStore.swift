@_exported import ImageValidation
import Foundation
import LMDB
import MemoryCache
import Locking
import Synchronization

/// A persistent key-value store of images keyed by URL: LMDB on disk, with checksums on
/// every read and image validation on every write.
///
/// ```swift
/// let store = try await ImageStore.open(path: "/var/cache/images")
/// try await store.async.put(pngBytes, for: "https://cdn.example.com/a.png")
/// if let image = try store.image(for: "https://cdn.example.com/a.png") { use(image.data) }
/// ```
///
/// Thread safety: every method may be called from any thread at once. Reads run in their
/// own snapshot on the caller's thread and never wait for a writer; writes are funnelled
/// through one writer queue. From Swift concurrency, write through `async` (`store.async`),
/// whose calls suspend instead of blocking: the synchronous writes block their thread on I/O.
///
/// A store is opened once per process: a second `init` for the same directory throws
/// `alreadyOpen` until the first instance is closed. Another *process* may open the same
/// store at the same time (LMDB coordinates them).
public final class ImageStore: Sendable {
    /// The store directory.
    public let path: String
    public let configuration: Configuration
    let tier: DurableTier
    /// The log and its applier; nil when the store is open read-only.
    let writes: WritePath?
    /// Entries kept in memory in front of LMDB; nil when turned off.
    let memory: MemoryTier?
    /// Access times, sweeps and the disk budget; nil when read-only.
    let maintenance: StoreMaintenance?
    let policy: ExpiryPolicy
    private let normalizer: URLNormalizer
    /// The write path's key filter, held here so a read reaches it without retaining the
    /// write path (which weak references make a slow, side-table retain); nil when read-only.
    private let keyFilter: KeyFilter?
    let validator: ImageValidator
    /// Counters, gauges and the event seam (`Observability/`).
    let counters: StoreCounters
    private let isClosed = Atomic<Bool>(false)
    private let identity: FileIdentity

    /// Opens the store at `path`, creating the directory and an empty store when missing, and
    /// recovers its write-ahead log (see `recoveryReport`).
    /// - Throws: `notADirectory`, `notWritable`, `notAStore` (the directory holds other
    ///   files), `newerFormat`, `corruptStore`, `alreadyOpen`, `writerLocked` (another process
    ///   writes to it; open with `readOnly`), `walCorrupt`, `invalidArgument` (a numeric
    ///   configuration field out of range), `storage` (a closed descriptor 0-2 cannot be filled).
    public init(path: String, configuration: Configuration = .init()) throws(ImageStoreError) {
        try configuration.validate()
        let memory = try MemoryTier(configuration)  // before anything is created or registered
        counters = StoreCounters(eventHandler: configuration.eventHandler, clock: configuration.clock)
        try StandardDescriptors.reserve(path: path)
        if configuration.readOnly {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                throw .notAStore(path: path, found: "nothing: the directory does not exist")
            }
            guard isDirectory.boolValue else { throw .notADirectory(path: path) }
        } else {
            try StoreDirectory.prepare(path)
        }
        guard let identity = FileIdentity(path: path) else {
            throw .notWritable(path: path, reason: String(cString: strerror(errno)))
        }
        guard Self.openStores.withLock({ $0.insert(identity).inserted }) else { throw .alreadyOpen(path: path) }
        policy = ExpiryPolicy(configuration)
        let clock = configuration.clock
        self.memory = memory
        do {
            let writerLock: WriterLock?
            (tier, writerLock) = try DurableTier.open(path: path, configuration: configuration)
            if let writerLock {
                if writerLock.waitedSeconds > 0 { counters.events.emit(.waitedForWriterLock(for: .seconds(writerLock.waitedSeconds))) }
                let maintenance = StoreMaintenance(
                    tier: tier, policy: policy, counters: counters, clock: { Self.milliseconds(clock()) },
                    onRemoved: { memory?.invalidate($0) })
                self.maintenance = maintenance
                writes = try WritePath(
                    tier: tier, writerLock: writerLock, configuration: configuration, counters: counters,
                    changed: { batch in
                        guard let memory else { return }
                        if batch.contains(where: { if case .deleteAll = $0.entry { true } else { false } }) {
                            memory.invalidateAll()
                        } else {
                            memory.invalidate(batch.compactMap(\.entry.cacheKey))
                        }
                    },
                    afterApply: { [counters, tier] in
                        counters.events.attempt(.diskBudget) { () throws(ImageStoreError) in try maintenance.enforceBudget() }
                        counters.refreshSizes(tier)
                    })
                // A store over its budget already (opened with a lower one, or the disk filled
                // first) is brought under it by its first write, not here: a put refused (for
                // the budget or bad input) must evict nothing (`enforceBudgetBeforeFirstWrite`).
                if let period = configuration.sweepPeriod { maintenance.startSweeping(every: period) }
            } else {
                maintenance = nil
                writes = nil
            }
        } catch {
            _ = Self.openStores.withLock { $0.remove(identity) }
            throw error
        }
        counters.refreshSizes(tier)
        keyFilter = writes?.index.keys
        self.path = path
        self.configuration = configuration
        self.validator = ImageValidator(limits: configuration.rejectTrailingBytes ? .strict : .default)
        self.identity = identity
        normalizer = URLNormalizer(maxBytes: configuration.maxURLBytes)
        if writes != nil {
            // Under the writer lock, which every compaction holds.
            do { try CompactionLeftovers.remove(forStoreAt: path) } catch { close(); throw error }
        }
    }

    /// Dropping the last reference without `close()` does no I/O on the dropping thread, so
    /// nothing there can block or fail unheard. It stops the store as a process crash would,
    /// without losing what was written: the log takes no more appends and its flusher stops;
    /// records already written stay in the log (none is checkpointed) and the next open
    /// replays them; `.none` records still queued unwritten are dropped, as `.none` allows for
    /// a crash; access times noted in memory are not saved. The writer lock (and this
    /// process's claim on the directory) is released on the store's own writer queue once the
    /// applier has finished what it was given, so reopening in this process at once may still
    /// find it held. Files close when their last user lets go. Call `close()` to write, apply
    /// and checkpoint everything, on a thread of your choosing.
    deinit {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        maintenance?.stop()
        let identity = identity
        guard let writes else {
            _ = Self.openStores.withLock { $0.remove(identity) }
            return
        }
        writes.detach { _ = Self.openStores.withLock { $0.remove(identity) } }
    }

    /// Closes the store: writes, applies and checkpoints the log, releases the writer lock;
    /// later calls throw `closed`. Waits for writes in progress (a put racing the close either
    /// completes, and is then in the store, or throws `closed`). Idempotent; blocks on I/O, so
    /// call it from a thread that may block.
    public func close() {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        maintenance?.stop()
        if let maintenance {
            counters.events.attempt(.closing) { () throws(ImageStoreError) in try writes?.settle() }
            tier.writer.sync { _ = counters.events.attempt(.persistingAccess) { () throws(ImageStoreError) in try maintenance.persistAccess() } }
        }
        writes?.close()
        tier.drainWrites()
        _ = Self.openStores.withLock { $0.remove(identity) }
        counters.events.drain()  // the handler has heard every failure of the close before it returns
    }


    /// Deletes every expired entry now, in batches (the background sweeper does the same
    /// every `Configuration.sweepPeriod`). With `dryRun`, only counts what would go.
    /// - Throws: `readOnly` (unless `dryRun`), storage errors, `closed`.
    @discardableResult
    public func sweepExpired(dryRun: Bool = false) throws(ImageStoreError) -> SweepReport {
        try checkOpen()
        guard let maintenance, let writes else {
            guard dryRun else { throw .readOnly(path: path) }
            let (count, bytes) = try tier.expiredSummary(now: Self.milliseconds(configuration.clock()))
            return SweepReport(entryCount: count, byteCount: bytes)
        }
        try writes.settle()
        if !dryRun {
            maintenance.enforceBudgetBeforeFirstWrite()
            writes.makeRoomToFree()
        }
        return try ImageStoreError.rethrowing(path: path, operation: "sweeping expired entries") { try tier.writer.sync { try maintenance.sweep(dryRun: dryRun) } }
    }

    /// Closes the store as a crash would: nothing queued is written, nothing is checkpointed,
    /// the log stays as it is on disk. For tests of recovery; not public API.
    package func abandonForTesting() {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        maintenance?.stop()
        writes?.abandon()
        _ = Self.openStores.withLock { $0.remove(identity) }
    }

    /// The write path's key filter (`KeyFilter`), for tests; nil when read-only.
    package var keyFilterForTesting: KeyFilter? { keyFilter }

    /// The log's state, for `imgstore-admin wal`; nil when read-only.
    package var logStatus: LogStatus? { writes?.log.status() }

    /// What recovering the write-ahead log found when the store opened (empty when read-only).
    public var recoveryReport: RecoveryReport { writes?.recoveryReport ?? RecoveryReport() }

    /// Applies everything logged to LMDB, syncs it, and retires the log segments it covers.
    /// Runs on its own on a size policy and on close; call it to force one.
    public func checkpoint() throws(ImageStoreError) {
        try checkOpen()
        let writes = try writePath()
        maintenance?.enforceBudgetBeforeFirstWrite()
        try writes.checkpoint()
    }

    // MARK: - Writing

    /// Validates and stores `data` as the image for `url`, replacing any previous entry.
    ///
    /// Returns once the write-ahead log holds the entry as durably as `durability` asks
    /// (`.storeDefault`: the configuration's, by default `.sync`: on stable storage). Reads see
    /// it at once. Blocks the calling thread on I/O: from Swift concurrency, call the `async`
    /// form (ImageStore+Async.swift), which suspends instead.
    /// - Parameters:
    ///   - expiry: when the entry expires; `.storeDefault` for `Configuration.defaultExpiry`.
    ///   - validators: the origin's `ETag`/`Last-Modified`, kept for revalidation.
    /// - Throws: `emptyURL`, `malformedURL`, `urlTooLong`, `emptyData`, `entryTooLarge`,
    ///   `invalidImage`, `invalidArgument` (an expiry or batch interval out of range; all before
    ///   anything is written); `entryOverDiskBudget` (the disk budget would evict it at once;
    ///   nothing written or evicted); `storeFull` (it would not fit; nothing written);
    ///   `noRoomForWrite` (the disk has too little room for it; nothing written); `corruptStore`
    ///   (the tree is damaged where the put would go; nothing written); `diskFull`, `logFailed`
    ///   (not acknowledged, outcome unknown: the record may have reached the log, and then the
    ///   entry is present after reopening); `readOnly`; `closed` (nothing written).
    @discardableResult
    public func put(_ data: Data, for url: String, expiry: Expiry = .storeDefault,
                    validators: CacheValidators = CacheValidators(),
                    durability: Durability = .storeDefault) throws(ImageStoreError) -> EntryInfo {
        let write = try preparePut(data, for: url, expiry: expiry,
                                   validators: validators, durability: durability)
        try write.path.append(write.entry, durability: write.durability)
        return finished(write)
    }

    /// Gives an existing entry (fresh or expired) a new life without changing its bytes: what a
    /// `304 Not Modified` answer to a revalidation means. Returns nil when there is no entry.
    /// Blocks on I/O like `put`; the `async` form suspends instead.
    /// - Parameters:
    ///   - expiry: when it expires again (`.storeDefault`: `Configuration.defaultExpiry` from now).
    ///   - validators: new validators, or nil to keep the entry's.
    /// - Throws: as `put` (no validation errors: the bytes are not validated again).
    @discardableResult
    public func refresh(_ url: String, expiry: Expiry, validators: CacheValidators? = nil,
                        durability: Durability = .storeDefault) throws(ImageStoreError) -> EntryInfo? {
        guard let write = try prepareRefresh(url, expiry: expiry,
                                             validators: validators, durability: durability) else { return nil }
        try write.path.append(write.entry, durability: write.durability)
        return finished(write)
    }

    /// Removes the entry for `url`; returns whether there was one. Blocks on I/O like `put`;
    /// the `async` form suspends instead.
    /// - Throws: `emptyURL`, `malformedURL`, `urlTooLong`, `corruptStore` (nothing
    ///   acknowledged), `storage`, `closed`.
    @discardableResult
    public func remove(_ url: String, durability: Durability = .storeDefault) throws(ImageStoreError) -> Bool {
        guard let write = try prepareRemove(url, durability: durability) else { return false }
        try write.path.append(write.entry, durability: write.durability)
        counters.removes.wrappingAdd(1, ordering: .relaxed)
        return true
    }

    /// Removes every entry, atomically. Blocks on I/O like `put`; the `async` form suspends.
    public func removeAll(durability: Durability = .storeDefault) throws(ImageStoreError) {
        let write = try prepareRemoveAll(durability: durability)
        try write.path.append(write.entry, durability: write.durability)
    }

    // MARK: - Reading

    /// The image stored for `url`, or nil when there is none or it expired. With
    /// `allowingStale`, an expired entry not yet swept is returned with `isStale` set (for
    /// callers that prefer an old image to none, such as offline use).
    ///
    /// The bytes are verified against their checksum first. Synchronous in every context: a
    /// read is answered from memory, the pending log or one LMDB read, and never waits for a
    /// writer (see `ImageStore.async`).
    /// - Throws: `checksumMismatch` when the stored bytes are corrupt (counted in
    ///   `statistics().corruptReads`, never served); URL errors; `storage`; `closed`.
    public func image(for url: String, allowingStale: Bool = false) throws(ImageStoreError) -> StoredImage? {
        try checkOpen()
        let cacheKey = try keys(for: url).cacheKey
        // One clock read per get, and none on a miss: read when a check first needs the time.
        var time = ReadClock(configuration)
        do {
            switch writes?.index.lookup(cacheKey) ?? .unknown {
            case let .put(record, data):
                return served(record, ImageContents(data: data, info: Self.info(record)), from: .disk,
                              counted: .pendingLog, allowingStale: allowingStale, now: time.now())
            case .deleted:
                counters.count(.miss)
                return nil
            case .unknown:
                break
            }
            // The key's hash, once: for the key filter, the memory tier and LMDB.
            let hash = tier.keyHash(cacheKey)
            // A key the store has never held is a miss without an LMDB lookup (`KeyFilter`), and
            // before the memory tier, whose lookup writes its shard's lock (a line two threads
            // missing at once would pass back and forth). Sound because the memory tier holds
            // only entries read from LMDB, whose keys the filter has.
            guard mayHold(hash) else {
                counters.count(.miss)
                return nil
            }
            try followWriter()
            // The memory tier drops only what expired by the coarse clock (`notAfterNow`); the
            // freshness that decides is checked here.
            if let hit = memory?.entry(cacheKey, hash: hash, now: { time.notAfterNow() }) {
                // The hot path: a fresh entry with a fixed expiry (the memory tier drops those once
                // expired) returns the cached object itself as the image's contents: no record or
                // info copy, no dates, no retain of the info's strings.
                if hit.record.slidingSeconds == 0, hit.record.expiresAt.map({ time.isBefore($0) }) ?? true {
                    counters.count(.memory)
                    // An access time no later than the read's is safe for the budget's order.
                    if policy.tracksAccess { maintenance?.tracker.touch(cacheKey, at: time.notAfterNow()) }
                    return StoredImage(contents: hit, source: .memory)
                }
                if allowingStale || !isExpired(hit.record, now: time.now()) {
                    return served(hit.record, hit, from: .memory, counted: .memory,
                                  allowingStale: allowingStale, now: time.now())
                }
            }
            let generation = memory?.currentGeneration ?? 0
            // A class reference, nil on a miss: no optional record is copied on the way out.
            let keptUpTo = memory?.maxEntryBytes ?? 0
            guard let entry = try tier.entry(cacheKey: cacheKey, hash: hash, keptUpTo: keptUpTo) else {
                counters.count(.miss)
                return nil
            }
            if let memory, !isExpired(entry.record, now: time.now()) { memory.fill(entry, hash: hash, readAt: generation) }
            return served(entry.record, entry, from: .disk, counted: .disk,
                          allowingStale: allowingStale, now: time.now())
        } catch {
            if case .checksumMismatch = error { counters.corruptReads.add(1, ordering: .relaxed) }
            throw error
        }
    }

    /// What `image(for:)` returns for an entry found in the log, the memory tier or LMDB, counted
    /// as `read` (or as a miss when it expired and `allowingStale` is false). `contents.info`
    /// is `Self.info(record)`; a sliding entry's expiry is replaced by the effective one.
    private func served(_ record: EntryRecord, _ contents: ImageContents, from source: StoredImage.Source,
                        counted read: StoreCounters.Read, allowingStale: Bool, now: Int64) -> StoredImage? {
        let stale = isExpired(record, now: now)
        guard allowingStale || !stale else {
            counters.count(.miss)
            return nil
        }
        counters.count(read)
        if stale { counters.count(.stale) }
        if !stale && policy.tracksAccess { maintenance?.tracker.touch(record.cacheKey, at: now) }
        // A fixed expiry is the record's, already in the info: the contents serve as they are.
        guard record.slidingSeconds > 0, let expiresAt = effectiveExpiry(record) else {
            return StoredImage(contents: contents, isStale: stale, source: source)
        }
        var info = contents.info
        info.expiresAt = Self.date(expiresAt)
        return StoredImage(data: contents.data, info: info, isStale: stale, source: source)
    }

    /// The metadata of the entry for `url` without reading its bytes, or nil.
    public func info(for url: String) throws(ImageStoreError) -> EntryInfo? {
        try checkOpen()
        guard let record = try record(cacheKey: keys(for: url).cacheKey), !isExpired(record) else { return nil }
        return Self.info(record)
    }

    /// Whether an unexpired entry exists for `url`.
    public func contains(_ url: String) throws(ImageStoreError) -> Bool {
        try info(for: url) != nil
    }

    /// Calls `body` with every entry's metadata (expired ones included), in key order, reading
    /// `pageSize` entries per short LMDB read transaction.
    ///
    /// `body` runs outside any transaction, so it may call any method of the store (nested
    /// reads never wait) and may take as long as it likes without pinning old pages. Each page
    /// is one snapshot, the walk is not: an entry put or removed meanwhile may or may not be
    /// visited; none is visited twice. Writes acknowledged before the call are all seen.
    /// - Throws: `corruptStore` for a damaged tree (the walk stops: a listing is never cut
    ///   short silently), storage errors, `closed`; and what `body` throws.
    public func forEachEntry(pageSize: Int = 256, _ body: (EntryInfo) throws(ImageStoreError) -> Void) throws(ImageStoreError) {
        try checkOpen()
        try writes?.settle()
        try tier.forEachRecord(pageSize: max(1, pageSize)) { (record) throws(ImageStoreError) in try body(Self.info(record)) }
    }

    /// Every entry's metadata, read as `forEachEntry` reads it.
    public func entries() throws(ImageStoreError) -> [EntryInfo] {
        var all: [EntryInfo] = []
        try forEachEntry { all.append($0) }
        return all
    }

    /// Counts and sizes from one snapshot, plus this process's counters.
    public func statistics() throws(ImageStoreError) -> StoreStatistics {
        try checkOpen()
        try writes?.settle()
        let (entryCount, logicalBytes) = try tier.counts()
        let environment: EnvironmentStatistics
        do { environment = try tier.environment.statistics() } catch {
            throw .from(error, path: path, operation: "reading statistics", maxMapSize: tier.maxMapSize)
        }
        let fileBytes = FileSystem.allocatedBytes(atPath: path + "/data.mdb") ?? 0
        let expired = try tier.expiredSummary(now: Self.milliseconds(configuration.clock()))
        let memoryStats = memory?.statistics ?? MemoryCacheStatistics()
        return StoreStatistics(
            entryCount: entryCount, logicalBytes: logicalBytes, fileBytes: fileBytes,
            usedBytes: environment.usedBytes, mapSize: environment.mapSize, maxMapSize: tier.maxMapSize,
            puts: counters.puts.load(ordering: .relaxed),
            hits: counters.total(.pendingLog) + counters.total(.memory) + counters.total(.disk), misses: counters.total(.miss),
            corruptReads: counters.corruptReads.load(ordering: .relaxed),
            expiredEntries: expired.count, expiredBytes: expired.bytes, occupiedBytes: try tier.occupiedBytes(),
            maxDiskBytes: configuration.maxDiskBytes,
            expiredEvictions: counters.expiredEvictions.load(ordering: .relaxed),
            budgetEvictions: counters.budgetEvictions.load(ordering: .relaxed),
            memoryEntries: memoryStats.count, memoryBytes: memoryStats.totalCost,
            memoryCostLimit: memory == nil ? 0 : configuration.memoryCostLimit,
            memoryHits: memoryStats.hits, memoryMisses: memoryStats.misses,
            memoryEvictions: memoryStats.evictions.capacity + memoryStats.evictions.costCap)
    }

    // MARK: - Helpers

    /// The newest record for `cacheKey`: the log's when it has one, else LMDB's.
    func record(cacheKey: String) throws(ImageStoreError) -> EntryRecord? {
        guard mayHold(cacheKey) else { return nil }
        return switch writes?.index.lookup(cacheKey) ?? .unknown {
        case let .put(record, _): record
        case .deleted: nil
        case .unknown: try tier.record(cacheKey: cacheKey)
        }
    }

    /// False when `cacheKey` is certainly in neither LMDB nor the log: a writable store's key
    /// filter (`KeyFilter`) says so. A read-only store has none (another process writes) and
    /// always looks.
    @inline(__always)
    func mayHold(_ cacheKey: String) -> Bool {
        guard keyFilter != nil else { return true }
        return mayHold(tier.keyHash(cacheKey))
    }

    /// A read-only store's writer is another process, whose changes to LMDB invalidate nothing
    /// here: the memory tier empties itself whenever LMDB's last commit moved (`MemoryTier.follow`).
    /// A writable store's own writes invalidate the keys they touch; it has nothing to do.
    @inline(__always)
    func followWriter() throws(ImageStoreError) {
        guard writes == nil, let memory else { return }
        let last = try tier.lastCommittedTransaction()
        memory.follow(committedTransaction: configuration.lastCommitProbe?(last) ?? last)
    }

    /// `mayHold` for a key's hash already computed.
    @inline(__always)
    func mayHold(_ hash: KeyHash) -> Bool {
        keyFilter?.mayContain(hash) ?? true
    }

    /// The durability a call asked for, else the configuration's, with its interval checked.
    func resolved(_ durability: Durability) throws(ImageStoreError) -> Durability {
        guard durability != .storeDefault else { return configuration.durability }
        try Configuration.check(durability, name: "durability")
        return durability
    }

    func writePath() throws(ImageStoreError) -> WritePath {
        guard let writes else { throw .readOnly(path: path) }
        return writes
    }

    /// The normalised URL and the cache key derived from it.
    func keys(for url: String) throws(ImageStoreError) -> (url: String, cacheKey: String) {
        let normalized = try normalizer.normalize(url)
        let cacheKey = configuration.keyFunction?(normalized) ?? normalized
        guard !cacheKey.isEmpty else {
            throw .malformedURL(url: URLNormalizer.excerpt(url), reason: "the configured key function returned an empty key")
        }
        return (normalized, cacheKey)
    }

    func validate(_ data: Data, url: String) throws(ImageStoreError) -> ImageFacts? {
        let mode: ValidationMode
        switch configuration.validation {
        case .none: return nil
        case .rejectInvalidDeep: mode = .deep
        case .rejectInvalid, .acceptUnknownFormats: mode = .structure
        }
        let outcome = data.withUnsafeBytes { bytes in
            Result { () throws(ImageValidationError) in try validator.validate(bytes, mode: mode) }
        }
        switch outcome {
        case .success(let facts):
            return facts
        case .failure(let error):
            if error.isUnknownFormat && configuration.validation == .acceptUnknownFormats { return nil }
            counters.rejected(error.kind.rawValue)
            throw .invalidImage(url: URLNormalizer.excerpt(url), reason: error.description)
        }
    }

    func isExpired(_ record: EntryRecord, now: Int64? = nil) -> Bool {
        guard let expiresAt = effectiveExpiry(record) else { return false }
        return expiresAt <= (now ?? Self.milliseconds(configuration.clock()))
    }

    /// The record's expiry, moved forward by reads noted in memory when it slides.
    func effectiveExpiry(_ record: EntryRecord) -> Int64? {
        policy.effectiveExpiry(of: record, lastAccess: record.slidingSeconds > 0 ? maintenance?.tracker.lastAccess(record.cacheKey) : nil)
    }

    func checkOpen() throws(ImageStoreError) {
        BorrowedRead.checkNotLending(self)
        if isClosed.load(ordering: .acquiring) { throw .closed(path: path) }
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded(.down)) }
    static func date(_ milliseconds: Int64) -> Date { Date(timeIntervalSince1970: Double(milliseconds) / 1000) }

    static func info(_ record: EntryRecord) -> EntryInfo {
        EntryInfo(
            url: record.url, byteCount: record.byteCount, checksum: record.checksum,
            createdAt: date(record.createdAt), expiresAt: record.expiresAt.map(date),
            lastAccessedAt: date(record.lastAccess), facts: record.facts, validators: record.validators)
    }

    /// Directories open in this process (by device and inode), to refuse a second open.
    private static let openStores = LockedValue<Set<FileIdentity>>([])
}
