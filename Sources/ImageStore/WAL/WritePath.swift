import Foundation
import Locking
import Synchronization

/// Everything a writable store adds to the durable tier: the writer lock, the write-ahead log,
/// its applier, and the pending index. Every write of the store goes through `append`; nothing
/// else writes to LMDB.
final class WritePath: Sendable {
    let tier: DurableTier
    let index: PendingIndex
    let log: WriteAheadLog
    let applier: LogApplier
    let recoveryReport: RecoveryReport
    private let lock: LockedValue<WriterLock?>
    private let syncFault: (@Sendable () -> ImageStoreError?)?
    /// `Configuration.keyFilterWillScan` (tests).
    private let keyFilterWillScan: (@Sendable () -> Void)?
    /// `Configuration.admissionWillRecordMeasurement` (tests).
    private let admissionWillRecordMeasurement: (@Sendable () -> Void)?
    private let directory: String
    private let fileSystem: any LogFileSystem
    /// Room left in the map, so `put` can refuse what cannot fit before logging it (an
    /// acknowledged put must be appliable).
    /// Internal for tests, which set a stale estimate.
    let space: MapSpace
    /// Metrics and the event seam (`Observability/`).
    private let counters: StoreCounters

    /// Housekeeping to run after each applied batch, on the writer queue (the disk budget).
    private let afterApply: @Sendable () -> Void

    /// Keeps the writer lock (taken by `DurableTier.open`), recovers the log into LMDB,
    /// checkpoints, and starts a new log.
    /// - Throws: `walCorrupt`, `storeFull` (replay needs a larger map),
    ///   `storage` and `diskFull` for I/O errors.
    init(tier: DurableTier, writerLock: WriterLock, configuration: ImageStore.Configuration, counters: StoreCounters,
         changed: @escaping @Sendable ([SequencedEntry]) -> Void,
         afterApply: @escaping @Sendable () -> Void) throws(ImageStoreError) {
        self.afterApply = afterApply
        syncFault = configuration.checkpointSyncFault
        keyFilterWillScan = configuration.keyFilterWillScan
        admissionWillRecordMeasurement = configuration.admissionWillRecordMeasurement
        let directory = tier.path
        self.tier = tier
        index = PendingIndex(keyHasher: tier.keyHasher, keyFilterMinimumKeys: configuration.keyFilterMinimumKeys)
        self.directory = directory
        self.counters = counters
        self.fileSystem = TimedLogFileSystem(base: configuration.logFileSystem, metrics: counters.log)
        lock = LockedValue(writerLock)  // taken by DurableTier.open, before any LMDB write

        // Recovery: replay what LMDB lacks, then checkpoint it all away.
        let applied = try tier.appliedSequence()
        let recovery = LogRecovery(directory: directory, fileSystem: fileSystem, salvage: configuration.salvageDamagedLog)
        // A data file the open found damaged (`DurableTier.checkStructure`; writes refused) is
        // not replayed into: applying could read its damaged pages, and fail or fault. The log
        // is only read, to go on numbering after it; every segment stays, and the salvage
        // (`verify --repair`) replays the records into its fresh data file.
        let damaged = tier.isRefusingWrites
        func replay() throws(ImageStoreError) -> (report: RecoveryReport, lastSequence: UInt64) {
            if damaged { return try recovery.replay(appliedSequence: applied) { _ in } }
            // The writer queue applies a segment's batches while this thread reads the next.
            let pipeline = ReplayPipeline(tier: tier)
            let result: (report: RecoveryReport, lastSequence: UInt64)
            do {
                result = try recovery.replay(
                    appliedSequence: applied, apply: { (batch) throws(ImageStoreError) in try pipeline.submit(batch) },
                    awaitApplied: pipeline.waitUntilFinished)
            } catch {
                // Nothing of this replay may still run on the writer queue once it throws.
                // The reading error is the one to report; a batch's failure after it adds nothing.
                pipeline.waitUntilIdle()
                throw error
            }
            try pipeline.finish()
            return result
        }
        var (report, lastSequence): (RecoveryReport, UInt64)
        var replayFoundTheDiskFull = false
        do {
            (report, lastSequence) = try replay()
        } catch .diskFull {
            replayFoundTheDiskFull = true
            // An entry logged as the disk filled: what the store keeps on disk that holds no
            // data (the space reserve, spare segments) gives it room; replay is idempotent.
            let freed = try Self.freeSpaceForReplay(in: directory, fileSystem: fileSystem)
            guard !freed.isEmpty else { throw .diskFull(path: directory) }
            (report, lastSequence) = try replay()
            report.warnings += freed
        }
        recoveryReport = report
        let segments = try LogRecovery.segments(in: directory, fileSystem: fileSystem)
        let spares: [UInt64]
        do { spares = try SegmentRecycler.spareNumbers(in: directory, fileSystem: fileSystem) } catch {
            throw .storage(path: directory, detail: "listing the log: \(error)")
        }
        var unretired = segments
        // With room to spare, every replayed segment is kept as a spare (a rename): deleting
        // one costs tens of milliseconds (46 ms for three of 64 MiB, ext4 with `discard`), and
        // the open need not wait for it. The writer queue deletes those beyond `maxSpares` once
        // the open returns (`SegmentRecycler.trim`, below). On a disk short of room they go at
        // once, as before: puts and the space reserve need the room now.
        let roomy = !replayFoundTheDiskFull
            && FileSystem.availableBytes(at: directory) ?? 0 >= segments.count * configuration.logSegmentBytes + 4 * SpaceReserve.byteCount
        if !damaged {
            // Always, even with nothing replayed: the checkpoint pins its snapshot, after which
            // the applier's commits skip their sync (`LMDB/MetaPages.swift`).
            try tier.sync()
            try Self.retire(&unretired, directory: directory, fileSystem: fileSystem,
                            spareLimit: roomy ? .max : SegmentRecycler.maxSpares)
        }
        // After the replay, which may need the room (it is made only when there is plenty).
        SpaceReserve.prepare(in: directory)

        let appliedNow = max(applied, lastSequence)
        space = MapSpace(measured: try tier.mapRoom())
        let relay = LogRelay()
        let index = self.index
        let applier = LogApplier(
            tier: tier, index: index, appliedSequence: appliedNow,
            // Well below the back-pressure limit, so writers held by it never wait for a gather.
            coalesceBytes: min(LogApplier.defaultCoalesceBytes, max(configuration.maxUnappliedBytes / 4, 1)),
            gatherDelay: configuration.applierGatherDelay.seconds,
            released: { relay.log?.released($0) },
            stopped: { relay.log?.stop(with: $0); counters.events.emit(.backgroundFailure(.applying, error: $0)) },
            afterBatch: { batch in relay.afterBatch?(batch) }, changed: changed)
        self.applier = applier
        let options = WriteAheadLog.Options(
            directory: directory, segmentBytes: configuration.logSegmentBytes,
            maxUnappliedBytes: configuration.maxUnappliedBytes, batchInterval: Self.batchInterval(configuration.durability),
            fileSystem: fileSystem)
        let found = try SyncedWatermark.read(in: directory)
        do {
            let watermark = try SyncedWatermark.open(in: directory, fileSystem: fileSystem, found: found, appliedSequence: appliedNow)
            log = try WriteAheadLog(
                options: options, firstSegment: ((segments + spares).max() ?? 0) + 1, nextSequence: appliedNow + 1,
                watermark: watermark,
                onWritten: { [applyLog = configuration.applyLog] in counters.log.written($0); if applyLog { applier.enqueue($0) } },
                onFailed: { index.discard($0) })
        } catch {
            throw Self.map(error, directory: directory)
        }
        relay.set(log: log) { [weak self] batch in self?.afterBatch(batch) }
        counters.events.emit(.recovered(report))
        rebuildKeyFilter()
        if segments.count + spares.count > SegmentRecycler.maxSpares {
            // Queued before any batch, so the spares the open kept are gone before the
            // applier's first checkpoint, and before `close` returns.
            let fileSystem = self.fileSystem
            tier.writer.async {
                counters.events.attempt(.checkpoint) { () throws(LogIOError) in
                    try SegmentRecycler.trim(in: directory, fileSystem: fileSystem)
                }
            }
        }
    }

    /// Builds the key filter afresh (`KeyFilter`) from the pending keys and one LMDB snapshot
    /// taken after them: at the open (before any put), and on the writer queue once the
    /// published table holds more keys than it was sized for. A failure (a damaged tree) keeps
    /// the table there is, which stays complete, or none, and then reads look every key up;
    /// the reads that reach the damage report it, so it is not reported here as well.
    private func rebuildKeyFilter() {
        guard !tier.isRefusingWrites else { return }
        let stored: Int
        do { stored = try tier.counts().entries } catch {
            index.keys.abandonRebuild()  // not started: backs the next attempt off all the same
            return
        }
        guard let (table, pending) = index.beginKeyFilterRebuild(storedKeys: stored) else { return }
        keyFilterWillScan?()
        do {
            let scanned = try tier.forEachKeyHash { table.insert($0) }
            index.keys.finishRebuild(keys: pending + scanned)
        } catch {
            index.keys.abandonRebuild()
        }
    }

    /// Deletes what the store keeps on disk that holds no data, for a replay that found the
    /// disk full: the space reserve and spare (recycled) segments. One sentence per thing freed.
    /// - Throws: `storage` when the directory cannot be listed or a spare not removed.
    private static func freeSpaceForReplay(in directory: String, fileSystem: any LogFileSystem) throws(ImageStoreError) -> [String] {
        var freed = SpaceReserve.release(in: directory).map { [$0] } ?? []
        do {
            let spares = try SegmentRecycler.spares(in: directory, fileSystem: fileSystem)
            for spare in spares { try fileSystem.remove(directory + "/" + spare) }
            if !spares.isEmpty { freed.append("the disk holding the store is full: \(spares.count) spare log segment(s) were deleted to replay the log") }
        } catch {
            throw .storage(path: directory, detail: "freeing spare log segments: \(error)")
        }
        return freed
    }

    private static func batchInterval(_ durability: Durability) -> TimeInterval {
        if case let .batched(interval) = durability { return interval.seconds }
        return Durability.defaultBatchWindow.seconds
    }

    // MARK: - Writing

    /// Logs `entry`, returning once it is as durable as `durability` promises.
    /// - Throws: `storeFull` (it would not fit in the map), `noRoomForWrite` (nothing
    ///   written), `diskFull`, `logFailed`, or the applier's failure.
    func append(_ entry: LogEntry, durability: Durability) throws(ImageStoreError) {
        if let failure = applier.failure { throw failure }
        let (need, logged) = try admit(entry)
        defer { space.appended(logged: logged) }
        do {
            try log.append(entry, durability: durability) { sequence in index.record(entry, sequence: sequence) }
        } catch {
            // These are refused before the entry is logged; after other failures the store
            // stops taking writes, and a reservation that stays does no harm.
            switch error {
            case .entryTooLarge, .closed: space.unreserve(need)
            default: break
            }
            throw error
        }
    }

    /// Appends as `append` does, suspending the task instead of blocking its thread (see
    /// `WriteAheadLog.appendAsync`, also for what cancellation leaves behind).
    /// - Throws: `CancellationError`, or what `append` throws.
    func appendAsync(_ entry: LogEntry, durability: Durability) async throws {
        if let failure = applier.failure { throw failure }
        let admitted: (need: MapRoom, logged: Int)
        if let now = try admitNowOrNil(entry) {
            admitted = now
        } else {
            // Waiting for the applier (a stale map estimate) blocks: off the cooperative pool.
            admitted = try await Blocking.run { [self] () throws(ImageStoreError) in try admitAfterSettling(entry) }
        }
        let (need, logged) = admitted
        defer { space.appended(logged: logged) }
        var queued = false
        do {
            try await log.appendAsync(entry, durability: durability) { sequence in
                queued = true
                index.record(entry, sequence: sequence)
            }
        } catch {
            // Refused before it was queued: it will never be applied. A queued record keeps its
            // reservation, as in `append`.
            if !queued { space.unreserve(need) }
            throw error
        }
    }

    /// Checks that the disk can take `entry` and reserves its room in the map, in one step
    /// (`MapSpace.admit`): puts racing for the last room are each admitted only with room left
    /// for those admitted before them. The caller owes `space.appended(logged:)` once it has
    /// appended (or failed to).
    /// - Returns: the map bytes reserved and the log bytes counted.
    /// - Throws: `noRoomForWrite` (the disk), `storeFull` (the map), `storage` when LMDB's
    ///   free pages cannot be read, what `settle` throws; nothing reserved, nothing written.
    private func admit(_ entry: LogEntry) throws(ImageStoreError) -> (need: MapRoom, logged: Int) {
        if let admitted = try admitNowOrNil(entry) { return admitted }
        return try admitAfterSettling(entry)
    }

    /// `admitNow`, with a disk too full for `entry` also answered nil: pages freed since the
    /// last checkpoint are pinned until the next (`LMDB/MetaPages.swift`), and
    /// `admitAfterSettling` checkpoints, which may make them reusable.
    private func admitNowOrNil(_ entry: LogEntry) throws(ImageStoreError) -> (need: MapRoom, logged: Int)? {
        do { return try admitNow(entry) } catch .noRoomForWrite { return nil }
    }

    /// Admits `entry` as `admit` does, or returns nil when the map estimate says it does not
    /// fit (the estimate may be stale: `admitAfterSettling`). Never waits.
    private func admitNow(_ entry: LogEntry) throws(ImageStoreError) -> (need: MapRoom, logged: Int)? {
        let need = MapSpace.need(entry)
        let logged: Int
        switch entry {
        case let .put(_, data): logged = data.count
        case .renew: logged = WALFormat.headerByteCount + 4096  // a record, never the bytes
        case .delete, .deleteAll:
            makeRoomToFree()
            return (.zero, 0)
        }
        let admitted = try space.admit(need: need, logged: logged) { (pending) throws(ImageStoreError) in
            try checkDisk(logged: logged, need: need.total, pending: pending)
        }
        return admitted ? (need, logged) : nil
    }

    /// Checkpoints LMDB and measures the map (pages freed since the last checkpoint are pinned
    /// until the next, `LMDB/MetaPages.swift`) and admits `entry`; or settles, measures the map
    /// once more, then admits `entry` or refuses it.
    /// - Throws: `storeFull` when it does not fit in the map, `noRoomForWrite` when the disk
    ///   cannot take it; what `admitNow` and `settle` throw.
    private func admitAfterSettling(_ entry: LogEntry) throws(ImageStoreError) -> (need: MapRoom, logged: Int) {
        try checkpointAndMeasure()
        if let admitted = try admitNow(entry) { return admitted }
        try settle()
        // The pages a removal just applied freed are reusable only after one more commit.
        try checkpointAndMeasure(advancing: true)
        guard let admitted = try admitNow(entry) else { throw .storeFull(path: directory, limit: tier.maxMapSize) }
        return admitted
    }

    /// On the writer queue: checkpoints LMDB (a failure is reported to the event handler, and
    /// the measurement counts what the old pin holds back), then measures the map. On the queue,
    /// because a measurement taken while the applier applied a batch and set its own (smaller)
    /// one could land after it and undo it, counting room that batch had just used, so a put
    /// admitted on it could find the map full when applied.
    ///
    /// `advancing` commits once before (`DurableTier.advance`), so that the pages the newest
    /// commit freed (a removal's) count.
    private func checkpointAndMeasure(advancing: Bool = false) throws(ImageStoreError) {
        try ImageStoreError.rethrowing(path: directory, operation: "measuring free space") {
            try tier.writer.sync {
                if advancing && !tier.isRefusingWrites { try tier.advance() }
                if !tier.isRefusingWrites { counters.events.attempt(.checkpoint) { () throws(ImageStoreError) in try tier.sync() } }
                let measured = try tier.mapRoom()
                admissionWillRecordMeasurement?()
                space.measured(measured)
            }
        }
    }

    /// Refuses a put the disk cannot take: the disk must hold its `logged` log bytes and the
    /// `need` bytes applying it may add to LMDB's file, after the `pending` bytes of writes
    /// admitted before it (less the free pages LMDB can reuse), so an acknowledged put can
    /// always be applied (the space reserve is not counted). Runs under `MapSpace`'s lock.
    /// - Throws: `noRoomForWrite`, or `storage` when LMDB's free pages cannot be read.
    private func checkDisk(logged: Int, need: Int, pending: Int) throws(ImageStoreError) {
        guard let available = FileSystem.availableBytes(at: directory), available < pending + need + logged else { return }
        // Pages LMDB freed (a removal, an eviction) take entries without growing the file.
        let needed = logged + max(0, pending + need - (try tier.reusableBytes()))
        if available < needed { throw .noRoomForWrite(path: directory, needed: needed, available: available) }
    }

    /// Before a removal or sweep, which free space but need a little first: releases the
    /// space reserve when the disk is full (`SpaceReserve`).
    func makeRoomToFree() { SpaceReserve.releaseIfFull(in: directory) }

    /// Waits until LMDB holds every write acknowledged before the call (and syncs the log).
    func settle() throws(ImageStoreError) {
        try applier.waitUntilApplied(try log.flush())
    }

    /// Applies and syncs everything, then retires every segment whose records LMDB holds.
    func checkpoint() throws(ImageStoreError) {
        try settle()
        let applied = applier.appliedSequence
        try ImageStoreError.rethrowing(path: directory, operation: "checkpointing") {
            try tier.writer.sync { try checkpointAll(log.takeCheckpointableSegments(appliedSequence: applied)) }
        }
    }

    /// `segments` checkpointed, and LMDB even when there are none: everything applied becomes
    /// what a crash rolls LMDB back to (`LMDB/MetaPages.swift`). `closing` ends with LMDB's
    /// closing checkpoint (`syncClosing`), even with no segment, for the commits outside the log
    /// (access times, evictions, sweeps) since the last checkpoint, which the next open would
    /// otherwise roll back.
    private func checkpointAll(_ segments: [UInt64], closing: Bool = false) throws(ImageStoreError) {
        try checkpoint(segments)
        guard !tier.isRefusingWrites else { return }
        if closing {
            try tier.syncClosing()
        } else if segments.isEmpty {
            try tier.sync()
        }
    }

    /// Settles, closes the log, and retires all of it, so the next open has nothing to
    /// replay; then releases the writer lock. Best effort after a failure: what could not be
    /// applied stays in the log for the next open.
    func close() {
        counters.events.attempt(.closing) { () throws(ImageStoreError) in try settle() }
        // Closing the log writes what appends raced in after the settle, and waits for them.
        let last = log.close()
        let settled = counters.events.attempt(.closing) { () throws(ImageStoreError) in try applier.waitUntilApplied(log.status().writtenSequence) }
        if settled && applier.failure == nil && log.failure == nil {
            let applied = applier.appliedSequence
            var segments = log.takeCheckpointableSegments(appliedSequence: applied)
            if let last, last.lastSequence <= applied { segments.append(last.number) }
            // What is not retired stays on disk, below applied-seq: the next open skips it.
            counters.events.attempt(.closing) { () throws(ImageStoreError) in
                try ImageStoreError.rethrowing(path: directory, operation: "checkpointing on close") { try tier.writer.sync { try checkpointAll(segments, closing: true) } }
            }
        }
        lock.withLock { $0 = nil }
    }

    /// Stops without I/O on the calling thread, for `ImageStore.deinit`: the log stops taking
    /// appends (`WriteAheadLog.detach`); then, on the writer queue, once the applier has
    /// finished what it was given, the writer lock is released and `then` runs. No checkpoint:
    /// what is in the log stays there for the next open to replay.
    func detach(then: @escaping @Sendable () -> Void) {
        log.detach()
        let lock = self.lock
        let (tier, counters) = (self.tier, self.counters)
        tier.writer.async {
            // LMDB as applied so far, kept (what is not applied stays in the log): otherwise the
            // next open rolls back to the last checkpoint, and commits outside the log are lost.
            if !tier.isRefusingWrites { counters.events.attempt(.closing) { () throws(ImageStoreError) in try tier.syncClosing() } }
            lock.withLock { $0 = nil }
            then()
        }
    }

    /// Stops without flushing, applying or checkpointing, as a crash would (tests only).
    func abandon() {
        _ = log.close()
        tier.drainWrites()
        lock.withLock { $0 = nil }
    }

    /// After each applied batch (on the writer queue): the batch's reservations end (with a
    /// fresh measurement when space may run short), and a checkpoint when a segment closed.
    private func afterBatch(_ batch: [SequencedEntry]) {
        afterApply()
        if index.keys.wantsRebuild { rebuildKeyFilter() }
        let need = batch.reduce(into: MapRoom.zero) { $0 += MapSpace.need($1.entry) }
        // A failed measurement counts the batch as using all it reserved (never an over-estimate).
        space.applied(need: need, measured: space.wantsMeasurement ? counters.events.value(.measuring) { () throws(ImageStoreError) in try tier.mapRoom() } : nil)
        guard let applied = batch.last?.sequence else { return }
        counters.log.applied(through: applied)
        let done = log.takeCheckpointableSegments(appliedSequence: applied)
        // A failure puts the segments back for the next checkpoint to retire; nothing is lost
        // meanwhile (LMDB holds their records, and they stay on disk).
        counters.events.attempt(.checkpoint) { () throws(ImageStoreError) in try checkpoint(done) }
    }

    /// Checkpoints `segments` (taken from the log); whatever a failure leaves unretired goes
    /// back to the log, so a later checkpoint retires it.
    private func checkpoint(_ segments: [UInt64]) throws(ImageStoreError) {
        guard !segments.isEmpty else { return }
        // Invariant: while the data file is known damaged, no segment is retired: it may hold
        // records the file lacks (not replayed at the open), which only the salvage applies.
        if tier.isRefusingWrites {
            log.putBack(segments)
            return
        }
        do throws(ImageStoreError) {
            if let fault = syncFault?() { throw fault }
            try tier.sync()
        } catch {
            // Fail-stop: retrying a failed writeback is unsafe (the kernel may have dropped the
            // pages, as with the log's fsync). The log keeps every record; reopening recovers.
            log.putBack(segments)
            counters.log.checkpointFailures.wrappingAdd(1, ordering: .relaxed)
            applier.fail(error)
            throw error
        }
        var unretired = segments
        do {
            try Self.retire(&unretired, directory: directory, fileSystem: fileSystem)
        } catch {
            log.putBack(unretired)
            counters.log.checkpointFailures.wrappingAdd(1, ordering: .relaxed)
            throw error
        }
        counters.log.checkpoints.wrappingAdd(1, ordering: .relaxed)
    }

    /// Retires `segments` (kept as spares or deleted), then syncs the directory: a checkpoint's
    /// second half. The caller synced LMDB (meta page included) first, once: a second
    /// `mdb_env_sync` here cost every checkpoint another `fdatasync` with nothing to write.
    /// `segments` keeps those not yet retired when it throws.
    private static func retire(_ segments: inout [UInt64], directory: String, fileSystem: any LogFileSystem,
                               spareLimit: Int = SegmentRecycler.maxSpares) throws(ImageStoreError) {
        guard !segments.isEmpty else { return }
        do {
            while let number = segments.first {
                try SegmentRecycler.retire(number, in: directory, fileSystem: fileSystem, spareLimit: spareLimit)
                segments.removeFirst()
            }
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
    /// Weak: the log's `onWritten` holds the applier, which holds this relay, so a strong
    /// reference here was a cycle that kept the store's LMDB environment open after `close`
    /// (and other processes' compactions refused). `WritePath` owns the log.
    private struct State: Sendable {
        weak var log: WriteAheadLog?
        var afterBatch: (@Sendable ([SequencedEntry]) -> Void)?
    }
    private let state = LockedValue(State())

    var log: WriteAheadLog? { state.withLock { $0.log } }
    var afterBatch: (@Sendable ([SequencedEntry]) -> Void)? { state.withLock { $0.afterBatch } }

    func set(log: WriteAheadLog, afterBatch: @escaping @Sendable ([SequencedEntry]) -> Void) {
        state.withLock { $0 = State(log: log, afterBatch: afterBatch) }
    }
}
