import Foundation
import Locking
import Synchronization

/// Moves written log records into LMDB: the store's single LMDB writer. Batches are applied in
/// one transaction each (which also records the last applied sequence number), on the durable
/// tier's writer queue, in sequence order.
///
/// The measurements below were taken while every commit synced LMDB's data pages
/// (`MDB_NOMETASYNC` skipped only the meta page). Since a checkpoint pins its snapshot
/// (`LMDB/MetaPages.swift`), commits between checkpoints sync nothing, but each still writes its
/// pages, and a transaction per group commit writes the B-tree's upper pages once per commit.
/// The applier therefore gathers: when it finds less than `coalesceBytes` queued, it waits up to
/// `gatherDelay` (10 ms by default) for more before it commits, unless someone waits for it
/// (`waitUntilApplied`: a settle, a checkpoint, a close) or applying has stopped. Acknowledging a
/// put never waits for the applier (reads of unapplied records come from the pending index), so
/// the wait costs no put its latency; it bounds how long LMDB may lag the log when writes are
/// sparse.
///
/// Large records are not gathered: while recent records average `streamedRecordBytes` or more
/// of memory cost (the image, its URL and key, 128 bytes), the applier commits what it finds at
/// once. A commit of them costs its bytes more than its sync, and an applier that waited fell
/// behind the log and flushed in bursts that stalled the log's syncs. Measured against the same
/// run's reference row (`imgstore-bench`'s first `log+lmdb-io-bound`, `dd14217`), three
/// alternating runs each: 16 writers of the image mix went from 0.64 to 0.86 of it, while
/// 4–16 KiB puts, still gathered, gave 1.15 and 1.06 at 1 and 16 writers against 1.37 and 1.06
/// before (single runs spread over 0.87–1.43).
///
/// Nor are they committed in large transactions: while streaming, a transaction takes at most
/// `streamedBatchBytes` (at least one record). A commit writes its pages and syncs them, and the
/// log's next `fdatasync`, which every waiting writer needs, queues behind that on the same
/// disk. An applier that fell behind took all it found (3–4 MiB at 16 writers) and each such
/// commit stalled the log; then the log's batches shrank, and the applier fell further behind.
/// Capped at 2 MiB, 16 writers of the mix gave 0.76–1.14 (mean 0.85) of the same run's
/// `log+lmdb-io-bound`, against 0.49–0.88 (mean 0.68) uncapped, in ten alternating single runs
/// of each; 1 and 4 MiB caps did as well as 2 in best-of-3 runs.
final class LogApplier: Sendable {
    /// Records per transaction at most, and bytes per transaction at most.
    static let maxBatchRecords = 2048
    static let maxBatchBytes = 64 << 20
    /// How long the applier waits for more records when few are queued, by default
    /// (`Configuration.applierGatherDelay`).
    static let coalesceDelay: TimeInterval = 0.010
    /// Queued bytes (memory cost) at which the applier commits without waiting.
    static let defaultCoalesceBytes = 8 << 20
    /// The mean memory cost of recent records at and above which the applier commits what it
    /// finds without waiting for more (see the type's comment).
    static let streamedRecordBytes = 64 << 10
    /// Memory cost one transaction takes at most while streaming (see the type's comment).
    static let streamedBatchBytes = 2 << 20

    /// How many of `entries` (from the front) one transaction takes: up to `maxBatchRecords`,
    /// and until `maxBytes` is reached (so one larger entry goes alone). Recovery's replay uses
    /// it too, with the default, so it never commits more than normal operation would.
    static func batchLength(_ entries: ArraySlice<SequencedEntry>, maxBytes: Int = maxBatchBytes) -> Int {
        var bytes = 0
        var count = 0
        while count < entries.count && count < maxBatchRecords && bytes < maxBytes {
            bytes += entries[entries.startIndex + count].entry.memoryCost
            count += 1
        }
        return count
    }

    private struct State {
        var queue: [SequencedEntry] = []
        /// The memory cost of `queue`.
        var queuedBytes = 0
        var scheduled = false
        var appliedSequence: UInt64
        var failure: ImageStoreError?
        /// Threads in `waitUntilApplied`: while any waits, the applier does not gather.
        var waiters = 0
        /// 32 times the mean memory cost of recent records (each new one weighs 1/32). Kept
        /// scaled, so integer division cannot stall the mean short of a steady cost.
        var recentRecordBytes32 = 0

        /// Whether recent records are large enough to be applied as found, in transactions of
        /// at most `streamedBatchBytes`.
        var isStreaming: Bool { recentRecordBytes32 >= 32 * LogApplier.streamedRecordBytes }

        /// Whether the drain should commit what is queued now rather than wait for more.
        func shouldCommitNow(coalesceBytes: Int) -> Bool {
            queue.isEmpty || waiters > 0 || failure != nil || queuedBytes >= coalesceBytes
                || queue.count >= LogApplier.maxBatchRecords || isStreaming
        }
    }

    private let tier: DurableTier
    private let index: PendingIndex
    private let state: LockedValue<State>
    private let progress = NSCondition()
    /// Wakes a drain that is gathering (`gather()`): enough arrived, or someone waits.
    private let arrivals = NSCondition()
    /// Queued bytes at which a drain stops gathering, and how long it gathers at most.
    private let coalesceBytes: Int
    private let gatherDelay: TimeInterval
    /// LMDB transactions committed so far (tests read it).
    let transactions = Atomic<Int>(0)
    /// Called with the memory released by each applied batch (the log's back-pressure).
    private let released: @Sendable (Int) -> Void
    /// Called once when applying stops with an error, so writers parked in back-pressure
    /// wake with it instead of waiting for memory that will never be released.
    private let stopped: @Sendable (ImageStoreError) -> Void
    /// Called after each batch, on the writer queue (checkpoint policy, statistics).
    private let afterBatch: @Sendable ([SequencedEntry]) -> Void
    /// Told what each batch changed, right after its commit and before the pending index
    /// forgets it, so caches in front of LMDB drop what they hold for it.
    private let changed: @Sendable ([SequencedEntry]) -> Void

    /// `coalesceBytes` is capped by the caller below its back-pressure limit, so writers held
    /// by back-pressure never wait for a gathering applier.
    init(tier: DurableTier, index: PendingIndex, appliedSequence: UInt64, coalesceBytes: Int = defaultCoalesceBytes,
         gatherDelay: TimeInterval = coalesceDelay,
         released: @escaping @Sendable (Int) -> Void, stopped: @escaping @Sendable (ImageStoreError) -> Void,
         afterBatch: @escaping @Sendable ([SequencedEntry]) -> Void,
         changed: @escaping @Sendable ([SequencedEntry]) -> Void) {
        self.coalesceBytes = coalesceBytes
        self.gatherDelay = gatherDelay
        self.changed = changed
        self.tier = tier
        self.index = index
        self.released = released
        self.stopped = stopped
        self.afterBatch = afterBatch
        state = LockedValue(State(appliedSequence: appliedSequence))
    }

    /// Queues written records (in sequence order) and makes sure a drain is scheduled.
    func enqueue(_ entries: [SequencedEntry]) {
        let (schedule, enough) = state.withLock { state -> (Bool, Bool) in
            state.queue.append(contentsOf: entries)
            for entry in entries {
                let cost = entry.entry.memoryCost
                state.queuedBytes += cost
                state.recentRecordBytes32 += cost - state.recentRecordBytes32 / 32
            }
            defer { state.scheduled = true }
            return (!state.scheduled, state.shouldCommitNow(coalesceBytes: coalesceBytes))
        }
        if schedule { tier.writer.async { self.drain() } }
        if enough { wakeGatherer() }
    }

    /// Wakes a drain waiting in `gather()`, after a change that may end its wait.
    private func wakeGatherer() {
        arrivals.lock()
        arrivals.signal()
        arrivals.unlock()
    }

    /// Waits (on the writer queue) until enough is queued to commit, someone waits for the
    /// applier, or `gatherDelay` has passed.
    private func gather() {
        let deadline = Date(timeIntervalSinceNow: gatherDelay)
        arrivals.lock()
        defer { arrivals.unlock() }
        // The state is read under `arrivals`, which every waker takes after changing it: no
        // wake-up is lost between the check and the wait.
        while !state.withLock({ $0.shouldCommitNow(coalesceBytes: coalesceBytes) }) {
            if !arrivals.wait(until: deadline) { return }
        }
    }

    /// The highest sequence number LMDB holds.
    var appliedSequence: UInt64 { state.withLock { $0.appliedSequence } }

    /// The error that stopped applying, if any.
    var failure: ImageStoreError? { state.withLock { $0.failure } }

    /// Blocks until LMDB holds everything up to `sequence`.
    /// - Throws: the applier's failure, if applying stopped.
    func waitUntilApplied(_ sequence: UInt64) throws(ImageStoreError) {
        state.withLock { $0.waiters += 1 }
        wakeGatherer()
        progress.lock()
        defer {
            progress.unlock()
            state.withLock { $0.waiters -= 1 }
        }
        while true {
            let (applied, failure) = state.withLock { ($0.appliedSequence, $0.failure) }
            if applied >= sequence { return }
            if let failure { throw failure }
            progress.wait()
        }
    }

    /// Stops applying with `error` (a failure of LMDB outside a batch, such as a checkpoint's
    /// sync): the store takes no more writes until it is reopened, and parked writers wake.
    func fail(_ error: ImageStoreError) {
        state.withLock { $0.failure = $0.failure ?? error }
        wakeGatherer()
        stopped(error)
        progress.lock()
        progress.broadcast()
        progress.unlock()
    }

    /// Applies queued batches until the queue is empty. Runs on the writer queue.
    private func drain() {
        while true {
            gather()
            let batch: [SequencedEntry] = state.withLock { state in
                if state.failure != nil || state.queue.isEmpty {
                    state.scheduled = false
                    return []
                }
                let count = Self.batchLength(
                    state.queue[...], maxBytes: state.isStreaming ? Self.streamedBatchBytes : Self.maxBatchBytes)
                if count == state.queue.count {  // the common case: take it all, no copying
                    defer {
                        state.queue = []
                        state.queuedBytes = 0
                    }
                    return state.queue
                }
                let batch = Array(state.queue.prefix(count))
                state.queue.removeFirst(count)
                state.queuedBytes -= batch.reduce(0) { $0 + $1.entry.memoryCost }
                return batch
            }
            guard let last = batch.last?.sequence else { return }
            do {
                try tier.apply(batch)
                transactions.wrappingAdd(1, ordering: .relaxed)
                changed(batch)
                index.applied(batch)
                released(batch.reduce(0) { $0 + $1.entry.memoryCost })
                // Housekeeping the batch triggers (the disk budget) counts as part of applying
                // it: waiters see the sequence only once it is done.
                afterBatch(batch)
                state.withLock { $0.appliedSequence = last }
            } catch {
                // The records stay in the log (durable) and in the pending index (served);
                // the store stops taking writes until it is reopened.
                state.withLock { $0.failure = error }
                stopped(error)
            }
            progress.lock()
            progress.broadcast()
            progress.unlock()
        }
    }
}
