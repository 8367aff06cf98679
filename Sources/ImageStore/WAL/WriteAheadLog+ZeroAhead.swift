import Foundation

/// Writing zeros ahead of the log, so that the `fdatasync` of a small batch writes its data and
/// nothing else.
///
/// A new segment is preallocated with `posix_fallocate`, which leaves its blocks *unwritten*
/// extents. On ext4 and XFS, the first write into such a block changes the extent map, so every
/// `fdatasync` that covers one also writes the file's metadata: on ext4 without a journal, one
/// more synchronous round trip to the device per sync (`ext4_write_inode` under
/// `__sync_dirty_buffer`). Blocks that were written before (a recycled segment, or zeros) need
/// no such change. PostgreSQL zero-fills new WAL segments for the same reason (`wal_init_zero`).
///
/// So while the log's syncs are small (their mean under `smallSyncBytes`), a thread of the
/// log's own (`imgstore.wal-zeroer`) keeps the `aheadBytes` after the write position written
/// with zeros, `chunkBytes` at a time, each chunk synced: the extent change is then durable
/// once per chunk, before any record is written there, instead of once per sync of the log.
/// Large batches (the image mix) pay the change once per megabytes and would pay the zeros'
/// bandwidth, so they get none. Only on ext4 and XFS (`LogFileSystem.writesZerosAhead`): on a
/// copy-on-write file system, zeros would only move the preallocated blocks.
///
/// Zeros read as the end of the log to recovery, exactly like preallocated space
/// (`WALFormat.swift`), so a crash at any point leaves nothing recovery reads differently. They
/// make nothing durable and claim nothing: only the log's own syncs do.
///
/// Invariants, all under the log's lock:
/// - The zeroer writes only at or after `leaderWriteEnd` (the end of the batch the leader is
///   writing, published before the leader waits or drops the lock) and the segment's size,
///   rounded up to a page: never over a record.
/// - A leader whose batch would reach a range being zeroed, or that rolls to the next segment,
///   waits until that range is done (`awaitZeroing`), and a roll forbids new ranges until it
///   ends (`leaderWriteEnd == .max`); `close()` and `detach()` wait for a range in flight
///   (`stopZeroing`). So the zeroer never writes to a segment the log has left, which a
///   checkpoint may recycle as a later segment.
/// - Any failure of the zeroer only stops zeroing: it writes and syncs through a descriptor of
///   its own, so the log's syncs still report every error of its pages.
extension WriteAheadLog {
    /// What the zeroer knows and does, guarded by the log's lock.
    struct ZeroAhead {
        /// Blocks of the open segment before this offset are written (records, or synced
        /// zeros). Reset at each roll, which no range in flight outlives.
        var writtenThrough = 0
        /// The range being zeroed now.
        var inFlight: Range<Int>?
        /// The end of the leader's batch being written; `.max` during a roll; 0 when none.
        var leaderWriteEnd = 0
        /// Eight times the mean bytes of recent synced batches (each new one weighs 1/8); 0
        /// until the first sync, and nothing is zeroed before it.
        var syncedBytes8 = 0
        /// Whether the zeroer thread sleeps on `zeroerBell` (see `ringZeroer`).
        var zeroerAsleep = false
        /// Whether the zeroer runs at all (`LogFileSystem.writesZerosAhead`), until the close or
        /// its first failure.
        var enabled = false
    }

    /// Mean synced-batch bytes under which zeros are written ahead.
    static let smallSyncBytes = 256 << 10
    /// How far ahead of the write position the zeroer keeps blocks written.
    static let aheadBytes = 2 << 20
    /// Bytes per zero write and writeback.
    static let chunkBytes = 512 << 10
    private static let pageBytes = 4096

    /// Starts a fresh accounting for a new open segment. (A recycled one has no preallocated
    /// bytes, `LogFile.preallocatedBytes`, so it gets no zeros: its blocks are written already.)
    func resetZeroAhead() {
        state.zeroAhead.writtenThrough = 0
    }

    /// Called by the leader before it drops the lock to write `bytes` (rolling first when
    /// `rolls`): publishes where its write ends (so no new range starts before that), then
    /// waits for a range in flight that it would reach. Called with the lock held.
    func awaitZeroing(writing bytes: Int, at offset: Int, rolls: Bool) {
        state.zeroAhead.leaderWriteEnd = rolls ? .max : offset + bytes
        while let range = state.zeroAhead.inFlight, rolls || offset + bytes > range.lowerBound {
            condition.wait()
        }
    }

    /// Called by the leader once its batch is written (`syncedBytes` of it synced, nil when
    /// not synced): updates the mean and rings the zeroer when the blocks ahead run short.
    /// Called with the lock held.
    func leaderWrote(syncedBytes: Int?) {
        state.zeroAhead.leaderWriteEnd = 0
        // A sync of nothing new (a flush) says nothing about the batches' size.
        if let syncedBytes, syncedBytes > 0 {
            let mean8 = state.zeroAhead.syncedBytes8
            // The first sync sets the mean: a log that starts with large batches zeros nothing.
            state.zeroAhead.syncedBytes8 = mean8 == 0 ? 8 * syncedBytes : mean8 + syncedBytes - mean8 / 8
        }
        if nextZeroRange() != nil { ringZeroer() }
    }

    /// The next range to zero, or nil when there is none to zero now. Called with the lock held.
    private func nextZeroRange() -> Range<Int>? {
        let zero = state.zeroAhead
        guard zero.enabled, zero.inFlight == nil, zero.leaderWriteEnd != .max, !state.isClosed,
              state.failure == nil, let segment = state.segment,
              zero.syncedBytes8 > 0, zero.syncedBytes8 < 8 * Self.smallSyncBytes else { return nil }
        let after = max(zero.writtenThrough, segment.size, zero.leaderWriteEnd)
        let start = (after + Self.pageBytes - 1) / Self.pageBytes * Self.pageBytes
        let end = segment.file.preallocatedBytes
        guard start < min(segment.size + Self.aheadBytes, end) else { return nil }
        return start..<min(start + Self.chunkBytes, end)
    }

    /// Wakes the zeroer thread if it sleeps. Called with the lock held.
    func ringZeroer() {
        guard state.zeroAhead.zeroerAsleep else { return }
        state.zeroAhead.zeroerAsleep = false
        zeroerBell.signal()
    }

    /// Stops the zeroer for good: waits for a range in flight (so no zero lands in a file the
    /// log closed, or that a later opener recycles) and lets its thread end. Called with the
    /// lock held, after `isClosed` is set (which stops new ranges).
    func stopZeroing() {
        state.zeroAhead.enabled = false
        while state.zeroAhead.inFlight != nil { condition.wait() }
        ringZeroer()
    }

    /// Starts the zeroer thread (`State.zeroAhead.enabled` was set in `init`). It ends once the
    /// log is closed or dropped.
    func startZeroer() {
        guard state.zeroAhead.enabled else { return }
        let thread = Thread { [weak self] in
            // The strong reference lives one turn of the loop, as the leader thread's does.
            while let log = self {
                log.condition.lock()
                guard log.state.zeroAhead.enabled else {
                    log.condition.unlock()
                    return
                }
                if !log.zeroNextRange() {
                    log.state.zeroAhead.zeroerAsleep = true
                    log.condition.unlock()
                    _ = log.zeroerBell.wait(timeout: .now() + 1)
                    log.condition.lock()
                    log.state.zeroAhead.zeroerAsleep = false
                }
                log.condition.unlock()
            }
        }
        thread.name = "imgstore.wal-zeroer"
        thread.start()
    }

    /// Zeros the next range, if there is one, and syncs it; returns whether it did. Called and
    /// returns with the lock held; drops it for the I/O.
    ///
    /// It writes through a descriptor of its own: a sync reports a writeback error once per
    /// open file description (`errseq`), so a sync on the log's descriptor could take an error
    /// of the log's own pages and leave the log's next `fdatasync` returning success. With its
    /// own, the log still hears every error, and the zeroer stops at its first.
    private func zeroNextRange() -> Bool {
        guard let range = nextZeroRange(), let segment = state.segment else { return false }
        state.zeroAhead.inFlight = range
        condition.unlock()
        var failed = false
        do {
            let file = try PosixLogFileSystem().open(options.directory + "/" + WALFormat.segmentName(segment.number), preallocate: 0)
            defer { file.close() }
            try Self.zeros.withUnsafeBytes { zeros in
                Result { () throws(LogIOError) in
                    try file.write([UnsafeRawBufferPointer(rebasing: zeros.prefix(range.count))], at: range.lowerBound)
                }
            }.get()
            try file.sync()
        } catch {
            failed = true
        }
        condition.lock()
        state.zeroAhead.inFlight = nil
        if failed {
            // The log's own syncs report what went wrong, if anything did: zeroing just stops.
            state.zeroAhead.enabled = false
        } else {
            // Invariant: a roll waits for the range in flight, so the segment is still open.
            assert(state.segment?.number == segment.number)
            state.zeroAhead.writtenThrough = max(state.zeroAhead.writtenThrough, range.upperBound)
            zeroedChunks.wrappingAdd(1, ordering: .relaxed)
        }
        condition.broadcast()  // a leader waiting for the range, a close
        return !failed
    }

    /// One chunk of zeros, shared by every log.
    private static let zeros = [UInt8](repeating: 0, count: chunkBytes)
}
