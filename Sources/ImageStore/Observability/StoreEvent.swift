import Foundation

/// Something the store did or suffered on its own, outside any call: what
/// `ImageStore.Configuration.eventHandler` receives.
///
/// Every failure of background work arrives here as `backgroundFailure`: nothing the store
/// does in the background fails silently. Bridge it to your logger in a few lines (see the
/// README's "Observability" section); `severity` and `description` are meant for that.
public enum StoreEvent: Sendable, CustomStringConvertible {
    /// Background work failed: `error` is usually an `ImageStoreError` (an `ImageLoaderError`
    /// for the loader's prefetches). The store goes on where it can; see `BackgroundTask` for
    /// what each failure leaves behind.
    case backgroundFailure(BackgroundTask, error: any Error)
    /// The store opened for writing and recovered its write-ahead log (every writable open
    /// does; an empty report means there was nothing to replay).
    case recovered(RecoveryReport)
    /// `verify(repair:)` set `entries` damaged entries aside in the quarantine.
    case quarantined(entries: Int)
    /// A compaction finished (or, for a dry run, estimated its gain).
    case compacted(CompactionReport)
    /// Opening waited for the writer lock (`writer.lock`), held for a moment by another
    /// process or by a child being spawned, before it was taken.
    case waitedForWriterLock(for: Duration)
    /// One sweep or budget enforcement removed `entries` entries holding `bytes` image bytes.
    case evicted(EvictionReason, entries: Int, bytes: Int)

    /// Background work the store (or the loader) does on its own.
    public enum BackgroundTask: String, Sendable, Hashable, CaseIterable {
        /// The periodic sweep of expired entries: the expired entries stay until the next one.
        case sweep
        /// Holding the disk budget after an applied batch: the store stays over it until the next batch.
        case diskBudget
        /// A checkpoint after a log segment filled. The log keeps every record (nothing is lost)
        /// but is not retired, and the store stops taking writes (fail-stop); reopening recovers.
        case checkpoint
        /// Applying the log to LMDB, or a checkpoint's sync: the applier stopped, and the store
        /// takes no more writes until it is reopened. Nothing acknowledged is lost (the log
        /// keeps it, and reads still see it).
        case applying
        /// Measuring the map's free space and the entry counts after a batch: puts count the
        /// batch as using all it reserved (never an over-estimate), and `metrics` keeps the
        /// sizes it had.
        case measuring
        /// Closing: what could not be applied or checkpointed stays in the log, and the next
        /// open replays it.
        case closing
        /// Writing the access times of sliding entries to disk (on close): those reads do
        /// not extend the entries' lives.
        case persistingAccess
        /// An `ImageLoader.prefetch` load (the URL is also negatively cached).
        case prefetch
        /// The loader's removal of a stored copy the origin now forbids keeping: the old copy
        /// stays until it expires.
        case removingUncacheable
        /// Removing the scratch directory a salvage (`verify(repair:)` of a damaged tree) built
        /// its fresh data file in, named in the error: the repair itself succeeded; the
        /// directory stays, taking disk space, until the next open or compaction removes it.
        case removingScratch
    }

    /// Why entries left the store.
    public enum EvictionReason: String, Sendable, Hashable, CaseIterable {
        /// They expired (the sweeper).
        case expired
        /// The disk budget (`maxDiskBytes`) was exceeded; least recently used first.
        case budget
        /// The memory tier's limits (count and bytes); the entries stay on disk.
        case memory
    }

    /// How loud a logger should be about the event.
    public enum Severity: Int, Sendable, Hashable, Comparable {
        case info, warning, error
        public static func < (a: Severity, b: Severity) -> Bool { a.rawValue < b.rawValue }
    }

    /// `error` for failures, `warning` for a recovery that dropped or salvaged bytes and for
    /// quarantines, `info` otherwise.
    public var severity: Severity {
        switch self {
        case .backgroundFailure: .error
        case let .recovered(report):
            report.tornBytesDropped > 0 || !report.salvaged.isEmpty || !report.warnings.isEmpty ? .warning : .info
        case .quarantined: .warning
        case .compacted, .waitedForWriterLock, .evicted: .info
        }
    }

    public var description: String {
        switch self {
        case let .backgroundFailure(task, error):
            "imgstore background \(task.rawValue) failed: \(error)"
        case let .recovered(report):
            "imgstore recovered its log: \(report.segmentsRead) segment(s) read, \(report.recordsReplayed) record(s) replayed, "
                + "\(report.tornBytesDropped) torn byte(s) dropped, \(report.salvaged.count) salvaged"
                + (report.warnings.isEmpty ? "" : "; " + report.warnings.joined(separator: "; "))
        case let .quarantined(entries):
            "imgstore verify --repair set \(entries) damaged entr\(entries == 1 ? "y" : "ies") aside in the quarantine"
        case let .compacted(report):
            "imgstore compaction\(report.dryRun ? " (dry run)" : ""): \(report.bytesBefore) -> \(report.bytesAfter) bytes in "
                + String(format: "%.3f s", report.duration.seconds)
        case let .waitedForWriterLock(wait):
            "imgstore waited " + String(format: "%.3f s", wait.seconds) + " for the writer lock"
        case let .evicted(reason, entries, bytes):
            "imgstore evicted \(entries) entr\(entries == 1 ? "y" : "ies") (\(bytes) bytes): \(reason.rawValue)"
        }
    }
}

extension StoreEvent {
    /// The old `waitedForWriterLock`, its wait in seconds.
    @available(*, deprecated, renamed: "waitedForWriterLock(for:)", message: "use waitedForWriterLock(for:), a Duration")
    public static func waitedForWriterLock(seconds: Double) -> StoreEvent {
        .waitedForWriterLock(for: Duration(exactlySeconds: seconds) ?? .zero)
    }
}
