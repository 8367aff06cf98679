import Foundation

/// The log's writer: appends records to segment files with group commit.
///
/// Writers queue their records; whoever finds no leader at work becomes the leader, takes the
/// whole queue, writes it with one `writev` and (when any record in it asks for it) one
/// `fdatasync`, then wakes everyone it covered. Others wait for the leader instead of
/// syncing themselves, so N concurrent durable puts cost about one sync, not N.
///
/// Sequence numbers are handed out under the lock in queue order, and only the leader writes,
/// so the file holds records in sequence order. A write or sync error puts the log into a
/// failed state: retrying an fsync after a failure is unsafe (the kernel may have dropped the
/// dirty pages), so every later append throws.
final class WriteAheadLog: Sendable {
    struct Options: Sendable {
        var directory: String
        var segmentBytes: Int
        var maxPayloadBytes: Int
        /// Bytes of written records not yet applied to LMDB above which writers wait.
        var maxUnappliedBytes: Int
        var batchInterval: TimeInterval
        var fileSystem: any LogFileSystem
    }

    /// A queued record, until the leader writes it.
    private struct Queued {
        var sequence: UInt64
        var entry: LogEntry
        var needsSync: Bool
        var cost: Int
    }

    /// The segment being written.
    private struct OpenSegment {
        var number: UInt64
        var file: any LogFile
        var size = 0
        var lastSequence: UInt64 = 0
        var hasUnsyncedBytes = false
    }

    /// Everything below is guarded by `condition`'s lock.
    private struct State {
        var nextSequence: UInt64
        var queue: [Queued] = []
        var writtenSequence: UInt64
        var syncedSequence: UInt64
        var leaderActive = false
        var failure: LogIOError?
        var segment: OpenSegment?
        /// Segments before the open one, with their last sequence, awaiting a checkpoint.
        var closedSegments: [(number: UInt64, lastSequence: UInt64)] = []
        /// Memory held by records not yet applied to LMDB (queued, written, or applying).
        var unappliedBytes = 0
        var lastSync = Date()
        var isClosed = false
    }

    let options: Options
    private let condition = NSCondition()
    // Guarded by `condition`; never touched without holding it.
    private nonisolated(unsafe) var state: State
    /// Receives written records in sequence order, from the leader; hands them to the applier.
    private let onWritten: @Sendable ([SequencedEntry]) -> Void
    /// Told which records a failed write lost, so the pending index stops serving them.
    private let onFailed: @Sendable ([UInt64]) -> Void
    private let flusher = FlusherHandle()

    /// Starts a log whose first segment is `firstSegment` and first record `nextSequence`.
    init(options: Options, firstSegment: UInt64, nextSequence: UInt64,
         onWritten: @escaping @Sendable ([SequencedEntry]) -> Void,
         onFailed: @escaping @Sendable ([UInt64]) -> Void) throws(LogIOError) {
        self.options = options
        self.onWritten = onWritten
        self.onFailed = onFailed
        state = State(nextSequence: nextSequence, writtenSequence: nextSequence - 1, syncedSequence: nextSequence - 1)
        state.segment = try Self.openSegment(firstSegment, options: options)
        startFlusher()
    }

    // MARK: - Appending

    /// Appends `entry`, returning once it is as durable as `durability` promises.
    ///
    /// `publish` runs under the log's lock with the record's sequence number, so whatever it
    /// records (the pending index) sees appends in log order.
    /// - Throws: `LogIOError` when the log failed (now or earlier); nothing is acknowledged then.
    @discardableResult
    func append(_ entry: LogEntry, durability: Durability, publish: (UInt64) -> Void) throws(LogIOError) -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        let cost = entry.memoryCost
        // Back-pressure: wait while the applier is behind, helping to write the queue so it can
        // catch up. A single record larger than the limit still passes when nothing is pending.
        while state.failure == nil && state.unappliedBytes > 0 && state.unappliedBytes + cost > options.maxUnappliedBytes {
            if !state.queue.isEmpty && !state.leaderActive { lead(forceSync: false) } else { condition.wait() }
        }
        if let failure = state.failure { throw failure }
        precondition(!state.isClosed, "append after the log was closed")

        let sequence = state.nextSequence
        state.nextSequence += 1
        let needsSync = if case .sync = durability { true } else { false }
        state.queue.append(Queued(sequence: sequence, entry: entry, needsSync: needsSync, cost: cost))
        state.unappliedBytes += cost
        publish(sequence)

        switch durability {
        case .none:
            return sequence
        case .batched:
            while state.writtenSequence < sequence {
                if let failure = state.failure { throw failure }
                if !state.leaderActive { lead(forceSync: false) } else { condition.wait() }
            }
        case .sync:
            while state.syncedSequence < sequence {
                if let failure = state.failure { throw failure }
                if !state.leaderActive { lead(forceSync: false) } else { condition.wait() }
            }
        }
        if let failure = state.failure, state.syncedSequence < sequence, needsSync { throw failure }
        return sequence
    }

    /// Writes and syncs everything queued so far; returns the last sequence number handed out.
    /// - Throws: the log's failure, if it has failed.
    @discardableResult
    func flush() throws(LogIOError) -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        let target = state.nextSequence - 1
        while state.syncedSequence < target || state.segment?.hasUnsyncedBytes == true {
            if let failure = state.failure { throw failure }
            if !state.leaderActive { lead(forceSync: true) } else { condition.wait() }
        }
        if let failure = state.failure { throw failure }
        return target
    }

    /// The applier reports that records holding `bytes` of memory reached LMDB.
    func released(_ bytes: Int) {
        condition.lock()
        state.unappliedBytes -= bytes
        // Invariant: only bytes that were counted in are released.
        assert(state.unappliedBytes >= 0)
        condition.broadcast()
        condition.unlock()
    }

    // MARK: - Leading

    /// Writes the whole queue as one batch. Called and returns with the lock held; drops it
    /// for the I/O so other writers can queue meanwhile.
    private func lead(forceSync: Bool) {
        // Invariant: one leader at a time, so the file is written in sequence order.
        assert(!state.leaderActive)
        state.leaderActive = true
        let batch = state.queue
        state.queue = []
        let syncNow = forceSync || batch.contains { $0.needsSync }
            || Date().timeIntervalSince(state.lastSync) >= options.batchInterval
        var segment = state.segment!
        condition.unlock()

        var failure: LogIOError?
        var rolled: (number: UInt64, lastSequence: UInt64)?
        do {
            let batchBytes = batch.reduce(0) { $0 + WALFormat.headerByteCount + $1.entry.payloadParts().reduce(0) { $0 + $1.count } }
            if segment.size > 0 && segment.size + batchBytes > options.segmentBytes {
                // Every record of the old segment must be durable before a record of the next one
                // can be: recovery treats damage before valid records as lost data.
                if segment.hasUnsyncedBytes { try segment.file.sync() }
                segment.file.close()
                rolled = (segment.number, segment.lastSequence)
                segment = try Self.openSegment(segment.number + 1, options: options)
            }
            if !batch.isEmpty {
                try write(batch, to: &segment)
            }
            if syncNow && segment.hasUnsyncedBytes {
                try segment.file.sync()
                segment.hasUnsyncedBytes = false
            }
        } catch {
            failure = error
        }

        condition.lock()
        if let rolled { state.closedSegments.append(rolled) }
        state.segment = segment
        if let failure {
            state.failure = state.failure ?? failure
            onFailed(batch.map(\.sequence))
        } else {
            if let last = batch.last?.sequence { state.writtenSequence = last }
            if !segment.hasUnsyncedBytes {
                state.syncedSequence = state.writtenSequence
                state.lastSync = Date()
            }
            if !batch.isEmpty { onWritten(batch.map { SequencedEntry(sequence: $0.sequence, entry: $0.entry) }) }
        }
        state.leaderActive = false
        condition.broadcast()
    }

    /// Writes the batch's records back to back with one `writev`.
    private func write(_ batch: [Queued], to segment: inout OpenSegment) throws(LogIOError) {
        var headers: [[UInt8]] = []
        var payloads: [[Data]] = []
        headers.reserveCapacity(batch.count)
        for queued in batch {
            let parts = queued.entry.payloadParts()
            payloads.append(parts)
            headers.append(Self.withBuffers(parts) { buffers in
                WALFormat.header(type: queued.entry.type, segment: segment.number, sequence: queued.sequence, payload: buffers)
            })
        }
        var flat: [Data] = []
        for (header, parts) in zip(headers, payloads) {
            flat.append(Data(header))
            flat.append(contentsOf: parts)
        }
        let total = flat.reduce(0) { $0 + $1.count }
        let file = segment.file
        let offset = segment.size
        try Self.withBuffers(flat) { buffers in
            Result { () throws(LogIOError) in try file.write(buffers, at: offset) }
        }.get()
        segment.size += total
        segment.lastSequence = batch.last!.sequence
        segment.hasUnsyncedBytes = true
    }

    /// Calls `body` with stable buffer pointers to every part.
    private static func withBuffers<R>(_ parts: [Data], _ body: ([UnsafeRawBufferPointer]) -> R) -> R {
        var buffers: [UnsafeRawBufferPointer] = []
        buffers.reserveCapacity(parts.count)
        func recurse(_ index: Int) -> R {
            if index == parts.count { return body(buffers) }
            return parts[index].withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> R in
                buffers.append(raw)
                return recurse(index + 1)
            }
        }
        return recurse(0)
    }

    private static func openSegment(_ number: UInt64, options: Options) throws(LogIOError) -> OpenSegment {
        let path = options.directory + "/" + WALFormat.segmentName(number)
        let recycled = SegmentRecycler.take(in: options.directory, fileSystem: options.fileSystem, as: path)
        let file = try options.fileSystem.open(path, preallocate: recycled ? 0 : options.segmentBytes)
        try options.fileSystem.syncDirectory(options.directory)
        return OpenSegment(number: number, file: file)
    }

    // MARK: - Checkpoints and state

    /// Segments whose records are all at or below `appliedSequence` (and LMDB synced): they may
    /// go. Removes them from the list and returns their numbers.
    func takeCheckpointableSegments(appliedSequence: UInt64) -> [UInt64] {
        condition.lock()
        defer { condition.unlock() }
        let done = state.closedSegments.filter { $0.lastSequence <= appliedSequence }
        state.closedSegments.removeAll { $0.lastSequence <= appliedSequence }
        return done.map(\.number)
    }

    /// A snapshot for `imgstore-admin wal` and statistics.
    func status() -> LogStatus {
        condition.lock()
        defer { condition.unlock() }
        return LogStatus(
            openSegment: state.segment?.number ?? 0, openSegmentBytes: state.segment?.size ?? 0,
            closedSegments: state.closedSegments.map(\.number), nextSequence: state.nextSequence,
            writtenSequence: state.writtenSequence, syncedSequence: state.syncedSequence,
            unappliedBytes: state.unappliedBytes, failure: state.failure?.description)
    }

    /// The failure that stopped the log, if any.
    var failure: LogIOError? {
        condition.lock()
        defer { condition.unlock() }
        return state.failure
    }

    /// Stops the background flusher and closes the open segment. Call after a final flush.
    /// Returns the open segment's number and last sequence, for the final checkpoint.
    func close() -> (number: UInt64, lastSequence: UInt64)? {
        flusher.stop()
        condition.lock()
        defer { condition.unlock() }
        state.isClosed = true
        guard let segment = state.segment else { return nil }
        segment.file.close()
        state.segment = nil
        return (segment.number, segment.lastSequence)
    }

    // MARK: - Background flushing

    /// Writes and syncs queued or unsynced records every `batchInterval`, for the batched and
    /// none modes, whose writers do not wait for a sync.
    private func startFlusher() {
        let interval = options.batchInterval
        let thread = Thread { [weak self] in
            while let log = self, !log.flusher.isStopped {
                log.flusher.sleep(interval)
                log.condition.lock()
                if log.state.failure == nil && !log.state.isClosed && !log.state.leaderActive
                    && (!log.state.queue.isEmpty || log.state.segment?.hasUnsyncedBytes == true) {
                    log.lead(forceSync: true)
                }
                log.condition.unlock()
            }
        }
        thread.name = "imgstore.wal-flusher"
        thread.start()
    }
}

/// Stops and wakes the flusher thread.
private final class FlusherHandle: Sendable {
    private let condition = NSCondition()
    private let stopped = LockedValue(false)

    var isStopped: Bool { stopped.withLock { $0 } }

    func sleep(_ seconds: TimeInterval) {
        condition.lock()
        if !isStopped { _ = condition.wait(until: Date(timeIntervalSinceNow: seconds)) }
        condition.unlock()
    }

    func stop() {
        condition.lock()
        stopped.withLock { $0 = true }
        condition.broadcast()
        condition.unlock()
    }
}

/// What `WriteAheadLog.status()` reports.
package struct LogStatus: Sendable, Hashable {
    package var openSegment: UInt64
    package var openSegmentBytes: Int
    package var closedSegments: [UInt64]
    package var nextSequence: UInt64
    package var writtenSequence: UInt64
    package var syncedSequence: UInt64
    package var unappliedBytes: Int
    package var failure: String?
}

import Locking
import Synchronization
