import Foundation
import ImageValidation

extension ImageStore {
    /// How a store is opened and what it accepts. Every limit has a default suited to a
    /// service caching web images; the README lists them.
    public struct Configuration: Sendable {
        /// Largest image accepted by `put`, in bytes. Default 64 MiB.
        public var maxEntryBytes: Int = 64 << 20
        /// Longest URL accepted, in UTF-8 bytes. Default 1 MiB. URLs of any length up to it
        /// work: keys are hashed, the full URL is kept in the entry.
        public var maxURLBytes: Int = 1 << 20
        /// No longer used: the map is sized once, at `maxMapSize`, so that it never has to be
        /// resized while readers run. Kept so existing configurations compile.
        public var initialMapSize: Int = 64 << 20
        /// The LMDB map size, set once when the store opens (address space, not disk: without
        /// `writeMap` the file grows only with the data). A put that needs more fails with
        /// `storeFull`. Default 1 TiB.
        public var maxMapSize: Int = 1 << 40
        /// LMDB reader slots (concurrent read transactions across all processes). Default 510.
        public var maxReaders: Int = 510
        /// Maps the normalised URL to the key entries are found by, e.g. to drop the
        /// signature parameters of signed CDN URLs. Default: the normalised URL itself.
        /// Must be deterministic; changing it orphans existing entries (`verify` reports them as
        /// `wrong-key`, and `--repair` moves them to the quarantine).
        public var keyFunction: (@Sendable (String) -> String)?
        /// What `put` does with bytes that are not a valid image. Default `.rejectInvalid`.
        public var validation: ValidationPolicy = .rejectInvalid
        /// The strict trailing-data policy: `put` rejects images with bytes after their end marker (PNG IEND,
        /// JPEG EOI, GIF trailer, WebP RIFF size) as `invalidImage`. Default false: they are stored, and the
        /// count is in `EntryInfo.image?.trailingBytes` (motion photos and vendor trailers are common on the
        /// web). Has no effect when `validation` is `.none`.
        public var rejectTrailingBytes = false
        /// The time source; inject a manual one in tests. Default: the system clock.
        ///
        /// Read at most once per read, only when the read needs the time (a miss does not), and
        /// then possibly inside the memory tier's lock: keep it cheap, and never call the store
        /// from it.
        public var clock: @Sendable () -> Date = { Date() } {
            didSet { usesSystemClock = false }
        }
        /// Whether `clock` is still the default: reads then take the time from
        /// `clock_gettime(CLOCK_REALTIME)` as integer milliseconds (`ReadClock`), the source
        /// `Date()` reads, without its conversions through `Double`; and a memory hit whose
        /// expiry is over a second away reads `CLOCK_REALTIME_COARSE` instead (`isBefore`).
        private(set) var usesSystemClock = true
        /// Use `MDB_WRITEMAP`. Faster bulk writes, but a full disk on a sparse data file is then
        /// a `SIGBUS` instead of an error; off by default.
        public var writeMap = false

        /// The memory tier's byte limit: image bytes kept in memory in front of LMDB, evicted by
        /// W-TinyLFU (recency plus frequency). 0 turns the memory tier off. Default 64 MiB.
        public var memoryCostLimit: Int = 64 << 20
        /// The memory tier's entry limit; 0 for none. Default 10 000.
        public var memoryCountLimit: Int = 10_000
        /// Images larger than this are never kept in memory, so one huge image cannot flush the
        /// rest; 0 keeps none (the memory tier is off). Default 4 MiB.
        public var memoryMaxEntryBytes: Int = 4 << 20

        /// How long an entry put with `.storeDefault` lives: `.never`, or `.after` a duration from
        /// zero to `maxLifetime` (100 years). Default 7 days. (`.at` and `.storeDefault` make no
        /// sense here: the store refuses to open with them, as `invalidArgument` naming
        /// `defaultExpiry`.)
        public var defaultExpiry: Expiry = .after(.seconds(7 * 86_400)) { didSet { unrepresentable["defaultTTL"] = nil } }
        /// When true, each read of an entry with a TTL extends its life to the read time plus
        /// its TTL (sliding expiry). Default false.
        public var slidingExpiration = false
        /// How often the background sweeper deletes expired entries (wall-clock time), from more
        /// than zero to `maxPeriod` (one year); nil to sweep only on demand (`sweepExpired()`).
        /// Default 60 s.
        public var sweepPeriod: Duration? = .seconds(60) { didSet { unrepresentable["sweepInterval"] = nil } }
        /// Entries a sweep or eviction deletes per transaction, so it never holds the writer
        /// for long. Default 256.
        public var sweepBatchSize = 256
        /// The disk budget: bytes of LMDB pages the entries may occupy; nil for no budget.
        /// When exceeded, the least recently used entries are evicted down to
        /// `diskBudgetLowWatermark` of it. A put that cannot fit under that (its pages and the
        /// store's own, as the budget measures them) is refused with `entryOverDiskBudget`
        /// before anything is logged or evicted, rather than acknowledged and evicted at once.
        /// A store opened over its budget is brought under it by its first write, sweep or
        /// checkpoint, not by the open: a refused put evicts nothing. The quarantine (what
        /// `verify --repair` set aside) is not counted and never evicted: it stays until
        /// purged. Default nil.
        public var maxDiskBytes: Int?
        /// The fraction of `maxDiskBytes` eviction brings the store down to. Default 0.9.
        public var diskBudgetLowWatermark = 0.9

        /// When puts and removes are acknowledged, unless a call says otherwise. Default `.sync`:
        /// on stable storage. See `Durability` for what each mode survives.
        public var durability: Durability = .sync
        /// Open without taking the writer lock, for tools that inspect a store a service is
        /// writing: reads see what the writer has applied to LMDB; writes throw `readOnly`. The
        /// memory tier empties itself whenever the writer commits to LMDB (it cannot know which
        /// keys changed), so it saves reads only while the writer is idle.
        public var readOnly = false
        /// On opening, skip damage in the middle of the write-ahead log instead of refusing to
        /// open (`walCorrupt`); what was skipped is listed in `recoveryReport.salvaged`.
        public var salvageDamagedLog = false
        /// Size of a write-ahead-log segment; a checkpoint can retire a segment once the next
        /// one starts. Default 64 MiB.
        public var logSegmentBytes: Int = 64 << 20
        /// Memory that written-but-not-yet-applied puts may hold before writers wait for the
        /// applier (back-pressure). Default 256 MiB.
        public var maxUnappliedBytes: Int = 256 << 20

        /// Receives what the store does and suffers in the background: every background
        /// failure (sweeps, the disk budget, checkpoints, the applier, close), recoveries with
        /// their report, quarantines, compactions, waits for the writer lock, and evictions in
        /// batches. Called in order on a queue of the store's own, never on a caller's thread or
        /// the writer queue, so it may log or block briefly; keep it short. Default nil.
        public var eventHandler: (@Sendable (StoreEvent) -> Void)?

        /// Replaces the log's file layer, so tests can inject faults. Not public API.
        package var logFileSystem: any LogFileSystem = PosixLogFileSystem()
        /// When false, logged records are never applied to LMDB, so tests can crash a store
        /// with everything still in the log. Not public API.
        package var applyLog = true
        /// How long the log applier waits for more records before it commits a small batch
        /// (`LogApplier`), so tests can make its gathering certain. Not public API.
        package var applierGatherDelay: Duration = .seconds(LogApplier.coalesceDelay)
        /// Called before each checkpoint's LMDB sync; an error it returns stands in for the
        /// sync's (tests of fail-stop). Not public API.
        package var checkpointSyncFault: (@Sendable () -> ImageStoreError?)?
        /// Called by the memory tier's fill, on the reading thread, just before and just after
        /// it inserts an entry it read from LMDB, so tests can land a write in between. Not
        /// public API.
        package var memoryFillHook: (@Sendable (MemoryFillPhase, String) -> Void)?
        /// Replaces the last commit a read-only store reads before each memory lookup
        /// (`followWriter`), given the one LMDB reports, so tests can stand in for a writer
        /// whose commit LMDB already reports (its meta page is written) while new read
        /// transactions still get the one before (the lock region's transaction ID is set after
        /// the meta page's write returns). Not public API.
        package var lastCommitProbe: (@Sendable (UInt64) -> UInt64)?
        /// Called by `verify` with each log segment's path just before it opens it, so tests
        /// can retire the segment in between, as a live writer's checkpoint may. Not public API.
        package var verifyWillOpenLogSegment: (@Sendable (String) -> Void)?
        /// Called by a salvage (`verify(repair:)` of a damaged tree) with its scratch directory
        /// just before it removes it, so tests can make the removal fail. Not public API.
        package var salvageWillRemoveScratch: (@Sendable (String) -> Void)?
        /// Replaces the URL hash (nil: XXH3-128, `Checksum.key`), so tests can force
        /// collisions. Not public API.
        package var keyHasher: (@Sendable (String) -> [UInt8])?
        /// The fewest keys the key filter (`KeyFilter`) is sized for, so tests can make it
        /// rebuild after a few puts. Not public API.
        package var keyFilterMinimumKeys = KeyFilter.defaultMinimumKeys
        /// Called by a key filter rebuild between its start and its LMDB snapshot, on the writer
        /// queue, so tests can land puts in between. Not public API.
        package var keyFilterWillScan: (@Sendable () -> Void)?
        /// Called by a put that waited for the applier, between its measurement of the map's
        /// free room and recording it (on the writer queue), so tests can try to apply a batch
        /// in between. Not public API.
        package var admissionWillRecordMeasurement: (@Sendable () -> Void)?

        /// Values given to the deprecated `TimeInterval` views that no `Expiry` or `Duration`
        /// holds (NaN, an infinite period, beyond ±292 billion years), by the view's name, so
        /// that validation still reports them instead of a nearby value.
        var unrepresentable: [String: TimeInterval] = [:]

        public init() {}
    }

    /// How `put` treats the bytes it is given.
    public enum ValidationPolicy: Sendable, Hashable {
        /// Only valid PNG, JPEG, GIF or WebP images are stored (structure check). The default.
        case rejectInvalid
        /// Like `rejectInvalid`, with a full decode of PNG and JPEG (slower; catches damage
        /// only a decoder sees).
        case rejectInvalidDeep
        /// Damaged images are rejected, but bytes in a format the validator does not know are
        /// stored as opaque blobs (for callers that store other things too).
        case acceptUnknownFormats
        /// Nothing is checked (the bytes are still checksummed).
        case none
    }
}
