import Foundation

/// A cheap snapshot of a store's counters and gauges: what `ImageStore.metrics` returns, for a
/// scrape every few seconds. Nothing in it is computed by a scan or waits for I/O.
///
/// Counters count this process's work since it opened the store. Gauges describe the store:
/// `entries` and `logicalBytes` as of the last applied batch or sweep, the others as of now.
/// `prometheusExposition()` renders it in Prometheus' text format.
public struct StoreMetrics: Sendable, Hashable {
    // MARK: Reads
    /// Gets answered from the write-ahead log's pending index (written, not yet applied).
    public var getsFromLog = 0
    /// Gets answered from the memory tier.
    public var getsFromMemory = 0
    /// Gets answered from LMDB.
    public var getsFromDisk = 0
    /// Gets that found no entry (or only an expired one, without `allowingStale`).
    public var misses = 0
    /// Gets with `allowingStale` that returned an expired entry.
    public var staleReads = 0
    /// Reads refused because the bytes did not match their checksum.
    public var corruptReads = 0

    // MARK: Writes
    /// Successful puts.
    public var puts = 0
    /// Removes that removed an entry.
    public var removes = 0
    /// Puts the validator refused, by `ImageValidationError.Kind` (its raw value).
    public var validationRejections: [String: Int] = [:]
    /// Entries evicted, by reason (memory: dropped from the memory tier for its limits).
    public var evictions: [StoreEvent.EvictionReason: Int] = [:]

    // MARK: Size
    /// Entries in LMDB (expired ones not yet swept included).
    public var entries = 0
    /// The sum of their image sizes.
    public var logicalBytes = 0
    /// Disk blocks allocated to `data.mdb`.
    public var fileBytes = 0
    /// Entries and image bytes in the memory tier.
    public var memoryEntries = 0
    public var memoryBytes = 0

    // MARK: Log
    /// Log segments on disk not yet retired (the open one included); 0 when read-only.
    public var logSegments = 0
    /// Bytes in those segments: the open one's written bytes plus `logSegmentBytes` for each
    /// closed one (the most a closed segment holds).
    public var logBytes = 0
    /// Records logged (or queued) and not yet applied to LMDB.
    public var unappliedRecords = 0
    /// Memory those records hold (what back-pressure limits with `maxUnappliedBytes`).
    public var unappliedBytes = 0
    /// How long ago the oldest written record the applier has not applied was written; zero
    /// when it has caught up.
    public var applierLag: Duration = .zero
    /// Records per group-commit batch.
    public var groupCommitBatchRecords = HistogramSnapshot()
    /// Seconds per log fsync.
    public var logFsyncSeconds = HistogramSnapshot()

    // MARK: Health
    /// Checkpoints that retired segments, and those that failed.
    public var checkpoints = 0
    public var checkpointFailures = 0
    /// Background failures by task (every one also went to the event handler).
    public var backgroundFailures: [StoreEvent.BackgroundTask: Int] = [:]
    /// The last background failure, if any.
    public var lastBackgroundFailure: BackgroundFailure?

    /// A background failure as `metrics` keeps it.
    public struct BackgroundFailure: Sendable, Hashable {
        public var task: StoreEvent.BackgroundTask
        /// The error's description.
        public var description: String
        /// When it happened (the store's clock).
        public var at: Date

        public init(task: StoreEvent.BackgroundTask, description: String, at: Date) {
            self.task = task
            self.description = description
            self.at = at
        }
    }

    /// Empty metrics (every counter zero), for tests and fakes.
    public init() {}
}

extension StoreMetrics {
    /// `applierLag` in seconds.
    @available(*, deprecated, renamed: "applierLag", message: "use applierLag, a Duration")
    public var applierLagSeconds: Double {
        get { applierLag.seconds }
        set { applierLag = Duration(exactlySeconds: newValue) ?? .zero }
    }
}
