import Foundation

/// The log's writer: appends records to segment files with group commit.
///
/// Writers queue their records; whoever finds no leader at work becomes the leader, takes the
/// whole queue, writes it with one `writev` and (when any record in it asks for it) one
/// `fdatasync`, then wakes everyone it covered. Others wait for the leader instead of
/// syncing themselves, so N concurrent durable puts cost about one sync, not N.
///
/// A writer waiting for its own record sleeps on a semaphore of its own (`RecordWaiter`), not
/// on the log's condition: a batch wakes the writers it satisfied and nobody else, and a
/// thread that stops leading with records still queued wakes one writer to lead them
/// (`wakeNextLeader`). A broadcast woke every waiting writer at every batch, and those whose
/// record was still queued slept again.
///
/// Sequence numbers are handed out under the lock in queue order, and only the leader writes,
/// so the file holds records in sequence order. A write or sync error puts the log into a
/// failed state: retrying an fsync after a failure is unsafe (the kernel may have dropped the
/// dirty pages), so every later append throws.
///
/// A leader takes at most `maxBatchRecords` records and `maxBatchBytes` bytes (a single larger
/// record goes alone), so a `.none` queue of a million small records is written in many
/// bounded batches rather than one unbounded one.
final class WriteAheadLog: Sendable {
    /// Records one leader writes at most.
    static let maxBatchRecords = 4096
    /// Payload bytes one leader writes at most (a single larger record is written alone).
    static let maxBatchBytes = 64 << 20
    /// Payload parts smaller than this are copied into the batch's buffer; larger ones (the
    /// image bytes) go to `pwritev` in place.
    private static let copyBelow = 16 << 10

    struct Options: Sendable {
        var directory: String
        var segmentBytes: Int
        /// Bytes of written records not yet applied to LMDB above which writers wait.
        var maxUnappliedBytes: Int
        var batchInterval: TimeInterval
        var fileSystem: any LogFileSystem
    }

    /// A queued record, until the leader writes it.
    struct Queued {
        var sequence: UInt64
        var entry: LogEntry
        var needsSync: Bool
        var cost: Int
        /// The payload, encoded once at append (the image bytes are not copied).
        var parts: [Data]
        /// Header and payload bytes on disk.
        var bytes: Int
    }

    /// The segment being written.
    struct OpenSegment {
        var number: UInt64
        var file: any LogFile
        var size = 0
        var lastSequence: UInt64 = 0
        var hasUnsyncedBytes = false
    }

    /// Everything below is guarded by `condition`'s lock.
    struct State {
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
        /// Set by `close()`: appends throw `closed` from then on.
        var isClosed = false
        /// The applier's failure: appends (and writers parked in back-pressure) throw it.
        var stopped: ImageStoreError?
        /// Tasks suspended in `appendAsync` (see WriteAheadLog+Async.swift).
        var suspended = SuspendedWriters()
        /// Threads parked in back-pressure (waiting on the condition for room).
        var writersAwaitingRoom = 0
        /// The leader thread sleeps on `leaderBell` rather than the condition: no task is
        /// suspended, so no broadcast can give it work (see `startLeader`).
        var leaderThreadOnBell = false
        /// The zeros written ahead of the open segment's write position (WriteAheadLog+ZeroAhead.swift).
        var zeroAhead = ZeroAhead()
        /// Threads in `append` waiting for their record, in the order they began to wait.
        /// Invariant: none is satisfied once the lock is released (`wakeSatisfiedWriters` runs
        /// after every change that can satisfy one); each is signalled once, by whoever removes it.
        var recordWaiters: [RecordWaiter] = []
    }

    /// A thread in `append` waiting until its record is written (`.batched`) or synced (`.sync`).
    final class RecordWaiter: Sendable {
        let sequence: UInt64
        let waitsForSync: Bool
        let semaphore = DispatchSemaphore(value: 0)
        /// Set before the signal when the record is as durable as the writer waits for (and
        /// the log has not failed): the writer then leaves without the lock.
        let isDone = Atomic<Bool>(false)

        init(sequence: UInt64, waitsForSync: Bool) {
            self.sequence = sequence
            self.waitsForSync = waitsForSync
        }
    }

    let options: Options
    let condition = NSCondition()
    // Guarded by `condition`; never touched without holding it.
    nonisolated(unsafe) var state: State
    /// Receives written records in sequence order, from the leader; hands them to the applier.
    private let onWritten: @Sendable ([SequencedEntry]) -> Void
    /// Told which records a failed write lost, so the pending index stops serving them.
    private let onFailed: @Sendable ([UInt64]) -> Void
    private let flusher = FlusherHandle()
    /// Wakes the leader thread while it sleeps outside the condition (`State.leaderThreadOnBell`):
    /// rung when a task suspends and at the close. Without it, every batch's broadcast woke
    /// that thread for nothing whenever only threads were writing.
    let leaderBell = DispatchSemaphore(value: 0)
    /// Wakes the zeroer thread while it sleeps (`ZeroAhead.zeroerAsleep`).
    let zeroerBell = DispatchSemaphore(value: 0)
    /// Times a writer waiting for a leader's batch woke so far (tests read it).
    let writerWakeups = Atomic<Int>(0)
    /// Times a woken writer took the lock again so far (tests read it).
    let writerRelocks = Atomic<Int>(0)
    /// Times a resumed task took the lock again to look for a failure so far (tests read it).
    let taskRechecks = Atomic<Int>(0)
    /// Chunks of zeros the zeroer wrote and synced so far (tests read it).
    let zeroedChunks = Atomic<Int>(0)
    /// Turns of the leader thread's loop so far (tests read it).
    let leaderThreadTurns = Atomic<Int>(0)
    /// Told after each completed sync how far the log is durable (the leader writes it).
    private let watermark: SyncedWatermark

    /// Starts a log whose first segment is `firstSegment` and first record `nextSequence`.
    init(options: Options, firstSegment: UInt64, nextSequence: UInt64, watermark: SyncedWatermark,
         onWritten: @escaping @Sendable ([SequencedEntry]) -> Void,
         onFailed: @escaping @Sendable ([UInt64]) -> Void) throws(LogIOError) {
        self.options = options
        self.watermark = watermark
        self.onWritten = onWritten
        self.onFailed = onFailed
        state = State(nextSequence: nextSequence, writtenSequence: nextSequence - 1, syncedSequence: nextSequence - 1)
        state.segment = try Self.openSegment(firstSegment, options: options)
        resetZeroAhead()
        state.zeroAhead.enabled = options.fileSystem.writesZerosAhead(in: options.directory)
        startFlusher()
        startLeader()
        startZeroer()
    }

    // MARK: - Appending

    /// Appends `entry`, returning once it is as durable as `durability` promises.
    ///
    /// `publish` runs under the log's lock with the record's sequence number, so whatever it
    /// records (the pending index) sees appends in log order.
    /// - Throws: `entryTooLarge` for a payload over `WALFormat.maxPayloadBytes`; `closed` after
    ///   `close()`; `diskFull` or `logFailed` when the log failed (now or
    ///   earlier); the applier's failure once it stopped (also to writers parked in
    ///   back-pressure). Nothing is queued when it throws before queuing; see `logFailed` for
    ///   a record whose write or sync failed.
    @discardableResult
    func append(_ entry: LogEntry, durability: Durability, publish: (UInt64) -> Void) throws(ImageStoreError) -> UInt64 {
        let parts = try Self.payloadParts(of: entry)
        condition.lock()
        // False once a batch made this thread's record durable while it slept: it leaves
        // without taking the lock again (`waitForRecord`).
        var holdsLock = true
        defer {
            if holdsLock {
                // However it leaves with the lock (led, waited, or threw), it leads no more.
                wakeNextLeader()
                condition.unlock()
            }
        }
        // Back-pressure: wait while the applier is behind, helping to write the queue so it can
        // catch up.
        while try !hasRoom(for: entry.memoryCost) {
            if !state.queue.isEmpty && !state.leaderActive {
                lead(forceSync: false)
            } else {
                state.writersAwaitingRoom += 1
                condition.wait()
                state.writersAwaitingRoom -= 1
            }
        }
        let sequence = enqueue(entry, parts: parts, durability: durability, publish: publish)
        let needsSync = if case .sync = durability { true } else { false }

        switch durability {
        case .background, .storeDefault:
            // Invariant: the store resolves `.storeDefault` before anything reaches the log.
            assert(durability != .storeDefault)
            return sequence
        case .batched:
            while state.writtenSequence < sequence {
                if let failure = state.failure { throw map(failure) }
                if !state.leaderActive {
                    lead(forceSync: false)
                } else if waitForRecord(sequence, sync: false) {
                    holdsLock = false
                    return sequence
                }
            }
        case .sync:
            while state.syncedSequence < sequence {
                if let failure = state.failure { throw map(failure) }
                if !state.leaderActive {
                    lead(forceSync: false)
                } else if waitForRecord(sequence, sync: true) {
                    holdsLock = false
                    return sequence
                }
            }
            handOff()
        }
        if let failure = state.failure, state.syncedSequence < sequence, needsSync { throw map(failure) }
        return sequence
    }

    /// Sleeps until a batch writes (or syncs) record `sequence`, the log fails, or this thread
    /// is woken to lead. Called with the lock held; drops it while asleep.
    /// - Returns: true when the batch that woke it made the record as durable as it waited for
    ///   (`RecordWaiter.isDone`): it then returns *without* the lock, since nothing is left for
    ///   it to do under it. False when it holds the lock again (woken to lead, or by a failure).
    private func waitForRecord(_ sequence: UInt64, sync: Bool) -> Bool {
        let waiter = RecordWaiter(sequence: sequence, waitsForSync: sync)
        state.recordWaiters.append(waiter)
        condition.unlock()
        waiter.semaphore.wait()
        writerWakeups.wrappingAdd(1, ordering: .relaxed)
        if waiter.isDone.load(ordering: .acquiring) { return true }
        condition.lock()
        writerRelocks.wrappingAdd(1, ordering: .relaxed)
        return false
    }

    /// Wakes the writers whose records are written or synced as they wait for, or all of them
    /// once the log has failed. Called with the lock held (by `wakeAll`); drops it while it
    /// signals them, and holds it again when it returns.
    func wakeSatisfiedWriters() {
        guard !state.recordWaiters.isEmpty else { return }
        let (written, synced, failed) = (state.writtenSequence, state.syncedSequence, state.failure != nil)
        var satisfied: [RecordWaiter] = []
        var waiting: [RecordWaiter] = []
        for waiter in state.recordWaiters {
            if failed || (waiter.waitsForSync ? synced : written) >= waiter.sequence {
                satisfied.append(waiter)
            } else {
                waiting.append(waiter)
            }
        }
        state.recordWaiters = waiting
        guard !satisfied.isEmpty else { return }
        if !failed {
            for waiter in satisfied { waiter.isDone.store(true, ordering: .releasing) }
        }
        // Signalled outside the lock, so writers appending meanwhile do not sleep on it while
        // the signals' system calls run (with them under the lock, 16 writers of small images
        // made 18% more context switches). Each was taken out of `recordWaiters` above, so it
        // is signalled exactly once, and no waiter left there is satisfied.
        condition.unlock()
        for waiter in satisfied { waiter.semaphore.signal() }
        condition.lock()
    }

    /// When records are queued, no leader is at work and writers wait, wakes the one that has
    /// waited longest, which leads them. Called with the lock held by every thread that leaves
    /// `append` or `flush` holding it (whether it led or not) and by the flusher and leader
    /// threads after they lead: whoever ended the last batch passes the work on. A writer whose
    /// record a batch made durable leaves without the lock and without this call: it led
    /// nothing, and the thread that led that batch makes the call (or leads again) itself.
    func wakeNextLeader() {
        guard !state.leaderActive, !state.queue.isEmpty, state.failure == nil, !state.recordWaiters.isEmpty else { return }
        state.recordWaiters.removeFirst().semaphore.signal()
    }

    /// The payload of `entry`, encoded once (the image bytes are not copied).
    /// - Throws: `entryTooLarge` over `WALFormat.maxPayloadBytes`: the bound is the format's, so
    ///   a record any opener would refuse is never acknowledged.
    static func payloadParts(of entry: LogEntry) throws(ImageStoreError) -> [Data] {
        let parts = entry.payloadParts()
        let payloadBytes = parts.reduce(0) { $0 + $1.count }
        guard payloadBytes <= WALFormat.maxPayloadBytes else {
            throw .entryTooLarge(byteCount: payloadBytes, limit: WALFormat.maxPayloadBytes)
        }
        return parts
    }

    /// Whether a record costing `cost` may be queued now, or must wait for the applier
    /// (back-pressure). A single record larger than the limit passes when nothing is pending.
    /// - Throws: what stops new appends (see `checkAccepting`). Called with the lock held.
    func hasRoom(for cost: Int) throws(ImageStoreError) -> Bool {
        try checkAccepting()
            && !(state.unappliedBytes > 0 && state.unappliedBytes + cost > options.maxUnappliedBytes)
    }

    /// Queues `entry` with the next sequence number and publishes it; returns the number.
    /// Called with the lock held, once back-pressure let it in.
    func enqueue(_ entry: LogEntry, parts: [Data], durability: Durability, publish: (UInt64) -> Void) -> UInt64 {
        let sequence = state.nextSequence
        state.nextSequence += 1
        let needsSync = if case .sync = durability { true } else { false }
        let bytes = WALFormat.headerByteCount + parts.reduce(0) { $0 + $1.count }
        let cost = entry.memoryCost
        state.queue.append(Queued(sequence: sequence, entry: entry, needsSync: needsSync, cost: cost, parts: parts, bytes: bytes))
        state.unappliedBytes += cost
        publish(sequence)
        return sequence
    }

    /// Throws what stops new appends (closed, failed, applier stopped); true otherwise.
    /// Called with the lock held.
    func checkAccepting() throws(ImageStoreError) -> Bool {
        if state.isClosed { throw .closed(path: options.directory) }
        if let failure = state.failure { throw map(failure) }
        if let stopped = state.stopped { throw stopped }
        return true
    }

    func map(_ error: LogIOError) -> ImageStoreError { WritePath.map(error, directory: options.directory) }

    /// The applier stopped with `error`: wakes every writer, parked in back-pressure or about
    /// to append, with it. Records already queued are still written (they are acknowledged
    /// or about to be, and the next open replays them).
    func stop(with error: ImageStoreError) {
        condition.lock()
        state.stopped = state.stopped ?? error
        wakeAll()
        condition.unlock()
    }

    /// Writes and syncs everything queued so far; returns the last sequence number handed out.
    /// - Throws: `diskFull` or `logFailed`, if the log has failed.
    @discardableResult
    func flush() throws(ImageStoreError) -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        defer { wakeNextLeader() }
        if let failure = drain() { throw map(failure) }
        return state.nextSequence - 1
    }

    /// Leads (or waits for leaders) until everything queued is written and synced; returns
    /// the log's failure instead when it has one. Called and returns with the lock held.
    private func drain() -> LogIOError? {
        let target = state.nextSequence - 1
        while state.syncedSequence < target || state.segment?.hasUnsyncedBytes == true {
            if let failure = state.failure { return failure }
            if !state.leaderActive { lead(forceSync: true) } else { condition.wait() }
        }
        return state.failure
    }

    /// The applier reports that records holding `bytes` of memory reached LMDB.
    ///
    /// Only writers parked in back-pressure wait for memory, so only they are woken (and the
    /// leader thread when it has a queue to write for tasks waiting for room, which an append
    /// that does not wait may have left without a broadcast): a broadcast woke every writer
    /// waiting for its sync, once per applied batch, for nothing.
    func released(_ bytes: Int) {
        condition.lock()
        state.unappliedBytes -= bytes
        // Invariant: only bytes that were counted in are released.
        assert(state.unappliedBytes >= 0)
        if state.writersAwaitingRoom > 0 || leaderHasWork { condition.broadcast() }
        resumeSatisfiedTasks()
        condition.unlock()
    }

    // MARK: - Leading

    /// Leads one more batch when synced records queued up while this thread's own batch was
    /// being synced. Their writers are asleep, and waking one to lead costs a scheduling delay
    /// during which the disk idles; the thread holding the lock right now can start the next
    /// sync at once (unless a writer that appended while `lead` signalled took the lead first).
    /// At most one batch, so no writer leads for others for long. Called with the lock held,
    /// after the caller's own record is synced.
    private func handOff() {
        guard !state.leaderActive, state.failure == nil, state.segment != nil,
              state.queue.contains(where: \.needsSync) else { return }
        lead(forceSync: false)
    }

    /// Writes the head of the queue (up to the batch caps) as one batch. Called and returns
    /// with the lock held; drops it for the I/O so other writers can queue meanwhile, and again
    /// at the end while it wakes the writers the batch satisfied (`wakeAll`), so callers
    /// re-check the state after it.
    func lead(forceSync: Bool) {
        // Invariant: one leader at a time, so the file is written in sequence order.
        assert(!state.leaderActive)
        state.leaderActive = true
        var count = 0
        var batchBytes = 0
        while count < state.queue.count && count < Self.maxBatchRecords
                && (count == 0 || batchBytes + state.queue[count].bytes <= Self.maxBatchBytes) {
            batchBytes += state.queue[count].bytes
            count += 1
        }
        let batch: [Queued]
        if count == state.queue.count {  // the common case: take it all, no copying
            batch = state.queue
            state.queue = []
        } else {
            batch = Array(state.queue.prefix(count))
            state.queue.removeFirst(count)
        }
        let syncNow = forceSync || batch.contains { $0.needsSync }
            || Date().timeIntervalSince(state.lastSync) >= options.batchInterval
        var segment = state.segment!
        let rolls = segment.size > 0 && segment.size + batchBytes > options.segmentBytes
        awaitZeroing(writing: batchBytes, at: segment.size, rolls: rolls)
        let writtenBefore = state.writtenSequence
        condition.unlock()

        var failure: LogIOError?
        var rolled: (number: UInt64, lastSequence: UInt64)?
        var synced = false
        do {
            if rolls {
                // Every record of the old segment must be durable before a record of the next one
                // can be: recovery treats damage before valid records as lost data.
                if segment.hasUnsyncedBytes {
                    try segment.file.sync()
                    try watermark.record(writtenBefore)
                }
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
                synced = true
                // Only after the sync returned: the watermark never claims more than is durable.
                try watermark.record(batch.last?.sequence ?? writtenBefore)
            }
        } catch {
            failure = error
        }

        condition.lock()
        if let rolled { state.closedSegments.append(rolled) }
        state.segment = segment
        if rolled != nil { resetZeroAhead() }
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
        leaderWrote(syncedBytes: synced ? batchBytes : nil)
        state.leaderActive = false
        wakeAll()
    }

    /// Writes the batch's records back to back. Headers and small payloads are copied into one
    /// buffer; each large part (an image) is written in place together with the buffer before
    /// it, one `pwritev` each. Every pointer lives only inside its own `withUnsafeBytes`, and
    /// nothing nests deeper than one part, however many records the batch holds.
    private func write(_ batch: [Queued], to segment: inout OpenSegment) throws(LogIOError) {
        let file = segment.file
        var offset = segment.size
        var pending: [UInt8] = []
        pending.reserveCapacity(min(batch.reduce(0) { $0 + $1.bytes }, Self.maxBatchBytes))
        for queued in batch {
            pending.append(contentsOf: WALFormat.header(type: queued.entry.type, segment: segment.number,
                                                        sequence: queued.sequence, payload: queued.parts))
            for part in queued.parts {
                if part.count < Self.copyBelow {
                    pending.append(contentsOf: part)
                    continue
                }
                try part.withUnsafeBytes { image in
                    pending.withUnsafeBytes { head in
                        Result { () throws(LogIOError) in try file.write([head, image], at: offset) }
                    }
                }.get()
                offset += pending.count + part.count
                pending.removeAll(keepingCapacity: true)
            }
        }
        if !pending.isEmpty {
            try pending.withUnsafeBytes { head in
                Result { () throws(LogIOError) in try file.write([head], at: offset) }
            }.get()
            offset += pending.count
        }
        segment.size = offset
        segment.lastSequence = batch.last!.sequence
        segment.hasUnsyncedBytes = true
    }

    private static func openSegment(_ number: UInt64, options: Options) throws(LogIOError) -> OpenSegment {
        let path = options.directory + "/" + WALFormat.segmentName(number)
        let recycled = try SegmentRecycler.take(in: options.directory, fileSystem: options.fileSystem, as: path)
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

    /// Gives back segments a failed checkpoint took but did not retire, so a later checkpoint
    /// retires them (their records are all applied).
    func putBack(_ segments: [UInt64]) {
        guard !segments.isEmpty else { return }
        condition.lock()
        defer { condition.unlock() }
        state.closedSegments = (state.closedSegments + segments.map { (number: $0, lastSequence: 0) })
            .sorted { $0.number < $1.number }
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

    /// Closes the log: later appends throw `closed`; appends already queued (and writers
    /// parked waiting for their record) are written and synced first, and the file is closed
    /// only once no leader is writing to it. Returns the open segment's number and last
    /// sequence, for the final checkpoint.
    func close() -> (number: UInt64, lastSequence: UInt64)? {
        flusher.stop()
        condition.lock()
        defer { condition.unlock() }
        state.isClosed = true
        wakeAll()  // writers parked in back-pressure now throw `closed`
        _ = drain()  // a failure is already the log's state: what it lost is not acknowledged
        while state.leaderActive { condition.wait() }
        stopZeroing()
        guard let segment = state.segment else { return nil }
        segment.file.close()
        watermark.close()
        state.segment = nil
        condition.broadcast()  // the leader thread ends
        ringLeaderBell()
        return (segment.number, segment.lastSequence)
    }

    /// Stops the log without any I/O on the calling thread (for a store dropped without
    /// `close()`): appends throw `closed` from now on, writers parked in back-pressure wake, and
    /// the flusher stops. Nothing queued is written (only `.none` records can be queued when
    /// no writer waits), and the files are closed when the last reference to them goes, never
    /// under a leader that is writing.
    func detach() {
        flusher.stop()
        condition.lock()
        state.isClosed = true
        stopZeroing()
        condition.broadcast()
        ringLeaderBell()
        condition.unlock()
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
                // A capped batch leaves the rest queued: keep leading until it is all written.
                while log.state.failure == nil && !log.state.isClosed && !log.state.leaderActive
                    && (!log.state.queue.isEmpty || log.state.segment?.hasUnsyncedBytes == true) {
                    log.lead(forceSync: true)
                }
                log.wakeNextLeader()
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
