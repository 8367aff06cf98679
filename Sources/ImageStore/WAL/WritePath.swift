import Foundation
import Locking
import Synchronization

/// Everything a writable store adds to the durable tier: the writer lock, the write-ahead log,
/// its applier, and the pending index. Every write of the store goes through `append`; nothing
/// else writes to LMDB.
final class WritePath: Sendable {
    let tier: DurableTier
    let index = PendingIndex()
    let log: WriteAheadLog
    let applier: LogApplier
    let recoveryReport: RecoveryReport
    private let lock: LockedValue<WriterLock?>
    private let directory: String
    private let fileSystem: any LogFileSystem
    /// Map bytes still free after what is applied: refreshed after each batch, so `put` can
    /// refuse what cannot fit before logging it (an acknowledged put must be appliable).
    private let availableBytes: Atomic<Int>
    private let batchesSinceMeasure = Atomic<Int>(0)
    /// Below this estimate, free space is re-measured after every batch.
    private static let measureBelow = 4 << 30

    /// Keeps the writer lock (taken by `DurableTier.open`), recovers the log into LMDB,
    /// checkpoints, and starts a new log.
    /// - Throws: `walCorrupt`, `storeFull` (replay needs a larger map),
    ///   `storage` and `diskFull` for I/O errors.
    /// Housekeeping to run after each applied batch, on the writer queue (the disk budget).
    private let afterApply: @Sendable () -> Void

    init(tier: DurableTier, writerLock: WriterLock, configuration: ImageStore.Configuration,
         changed: @escaping @Sendable ([SequencedEntry]) -> Void,
         afterApply: @escaping @Sendable () -> Void) throws(ImageStoreError) {
        self.afterApply = afterApply
        let directory = tier.path
        self.tier = tier
        self.directory = directory
        self.fileSystem = configuration.logFileSystem
        lock = LockedValue(writerLock)  // taken by DurableTier.open, before any LMDB write

        // Recovery: replay what LMDB lacks, then checkpoint it all away.
        let applied = try tier.appliedSequence()
        let maxPayload = configuration.maxEntryBytes + 2 * configuration.maxURLBytes + 4096
        let recovery = LogRecovery(directory: directory, fileSystem: fileSystem, maxPayloadBytes: maxPayload,
                                   salvage: configuration.salvageDamagedLog)
        let (report, lastSequence) = try recovery.replay(appliedSequence: applied) { (batch) throws(ImageStoreError) in
            try ImageStoreError.rethrowing(path: directory, operation: "replaying the log") { try tier.writer.sync { try tier.apply(batch) } }
        }
        recoveryReport = report
        let segments = LogRecovery.segments(in: directory)
        let spares = SegmentRecycler.spares(in: directory).compactMap { WALFormat.segmentNumber(fromName: String($0.dropFirst(SegmentRecycler.sparePrefix.count))) }
        try Self.checkpoint(tier: tier, segments: segments, directory: directory, fileSystem: fileSystem)

        let appliedNow = max(applied, lastSequence)
        availableBytes = Atomic(try tier.availableBytes())
        let relay = LogRelay()
        let index = self.index
        let applier = LogApplier(
            tier: tier, index: index, appliedSequence: appliedNow,
            released: { relay.log?.released($0) },
            afterBatch: { applied in relay.afterBatch?(applied) }, changed: changed)
        self.applier = applier
        let options = WriteAheadLog.Options(
            directory: directory, segmentBytes: configuration.logSegmentBytes, maxPayloadBytes: maxPayload,
            maxUnappliedBytes: configuration.maxUnappliedBytes, batchInterval: Self.batchInterval(configuration.durability),
            fileSystem: fileSystem)
        do {
            log = try WriteAheadLog(
                options: options, firstSegment: ((segments + spares).max() ?? 0) + 1, nextSequence: appliedNow + 1,
                onWritten: { [applyLog = configuration.applyLog] in if applyLog { applier.enqueue($0) } },
                onFailed: { index.discard($0) })
        } catch {
            throw Self.map(error, directory: directory)
        }
        relay.set(log: log) { [weak self] applied in self?.afterBatch(applied) }
    }

    private static func batchInterval(_ durability: Durability) -> TimeInterval {
        if case let .batched(interval) = durability { return interval }
        return Durability.defaultBatchInterval
    }

    // MARK: - Writing

    /// Logs `entry`, returning once it is as durable as `durability` promises.
    /// - Throws: `storeFull` (it would not fit in the map), `diskFull`, `logFailed`, or the
    ///   applier's failure.
    func append(_ entry: LogEntry, durability: Durability) throws(ImageStoreError) {
        if let failure = applier.failure { throw failure }
        if case let .put(_, data) = entry {
            // Room for the value's overflow pages plus B-tree pages, and what is queued ahead.
            let needed = data.count + data.count / 8 + (64 << 10) + log.status().unappliedBytes
            if availableBytes.load(ordering: .relaxed) < needed {
                // The estimate may be stale: refresh it once before refusing.
                settleQuietly()
                if let fresh = try? tier.availableBytes() { availableBytes.store(fresh, ordering: .relaxed) }
                if availableBytes.load(ordering: .relaxed) < needed {
                    throw .storeFull(path: directory, limit: tier.maxMapSize)
                }
            }
        }
        do {
            try log.append(entry, durability: durability) { sequence in index.record(entry, sequence: sequence) }
        } catch {
            throw Self.map(error, directory: directory)
        }
    }

    /// Waits until LMDB holds every write acknowledged before the call (and syncs the log).
    func settle() throws(ImageStoreError) {
        let last: UInt64
        do { last = try log.flush() } catch { throw Self.map(error, directory: directory) }
        try applier.waitUntilApplied(last)
    }

    private func settleQuietly() { try? settle() }

    /// Applies and syncs everything, then retires every segment whose records LMDB holds.
    func checkpoint() throws(ImageStoreError) {
        try settle()
        let applied = applier.appliedSequence
        try ImageStoreError.rethrowing(path: directory, operation: "checkpointing") {
            try tier.writer.sync {
                let done = log.takeCheckpointableSegments(appliedSequence: applied)
                try Self.checkpoint(tier: tier, segments: done, directory: directory, fileSystem: fileSystem)
            }
        }
    }

    /// Settles, closes the log, and retires all of it, so the next open has nothing to
    /// replay; then releases the writer lock. Best effort after a failure: what could not be
    /// applied stays in the log for the next open.
    func close() {
        let settled = (try? settle()) != nil
        let last = log.close()
        if settled && applier.failure == nil && log.failure == nil {
            let applied = applier.appliedSequence
            var segments = log.takeCheckpointableSegments(appliedSequence: applied)
            if let last, last.lastSequence <= applied { segments.append(last.number) }
            try? ImageStoreError.rethrowing(path: directory, operation: "checkpointing on close") {
                try tier.writer.sync { try Self.checkpoint(tier: tier, segments: segments, directory: directory, fileSystem: fileSystem) }
            }
        }
        lock.withLock { $0 = nil }
    }

    /// Stops without flushing, applying or checkpointing, as a crash would (tests only).
    func abandon() {
        _ = log.close()
        tier.drainWrites()
        lock.withLock { $0 = nil }
    }

    /// After each applied batch (on the writer queue): refresh the free-space estimate, and
    /// checkpoint when a segment has been closed.
    private func afterBatch(_ applied: UInt64) {
        afterApply()
        // Measuring free space reads LMDB's free list; only worth it when space may run short.
        let batches = batchesSinceMeasure.add(1, ordering: .relaxed).newValue
        if availableBytes.load(ordering: .relaxed) < Self.measureBelow || batches >= 256 {
            batchesSinceMeasure.store(0, ordering: .relaxed)
            if let free = try? tier.availableBytes() { availableBytes.store(free, ordering: .relaxed) }
        }
        let done = log.takeCheckpointableSegments(appliedSequence: applied)
        if !done.isEmpty {
            try? Self.checkpoint(tier: tier, segments: done, directory: directory, fileSystem: fileSystem)
        }
    }

    /// LMDB synced (meta page included), then the segments retired, then the directory synced.
    private static func checkpoint(tier: DurableTier, segments: [UInt64], directory: String,
                                   fileSystem: any LogFileSystem) throws(ImageStoreError) {
        guard !segments.isEmpty else { return }
        try tier.sync()
        do {
            for number in segments { try SegmentRecycler.retire(number, in: directory, fileSystem: fileSystem) }
            try fileSystem.syncDirectory(directory)
        } catch {
            throw map(error, directory: directory)
        }
    }

    /// A log I/O error as the store reports it: a full disk as `diskFull` (LMDB and the
    /// kernel may say `EIO` for a write cut short by one), anything else as `logFailed`.
    static func map(_ error: LogIOError, directory: String) -> ImageStoreError {
        if error.isNoSpace || (error.code == EIO && (FileSystem.availableBytes(at: directory) ?? .max) < 1 << 20) {
            return .diskFull(path: directory)
        }
        return .logFailed(path: directory, detail: error.description)
    }
}

/// Lets the applier reach the log (and the write path) that are created after it.
private final class LogRelay: Sendable {
    private let state = LockedValue<(log: WriteAheadLog?, afterBatch: (@Sendable (UInt64) -> Void)?)>((nil, nil))

    var log: WriteAheadLog? { state.withLock { $0.log } }
    var afterBatch: (@Sendable (UInt64) -> Void)? { state.withLock { $0.afterBatch } }

    func set(log: WriteAheadLog, afterBatch: @escaping @Sendable (UInt64) -> Void) {
        state.withLock { $0 = (log, afterBatch) }
    }
}
