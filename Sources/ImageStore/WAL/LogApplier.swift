import Foundation
import Locking
import Synchronization

/// Moves written log records into LMDB: the store's single LMDB writer. Batches are applied in
/// one transaction each (which also records the last applied sequence number), on the durable
/// tier's writer queue, in sequence order.
final class LogApplier: Sendable {
    /// Records per transaction at most, and bytes per transaction at most.
    static let maxBatchRecords = 2048
    static let maxBatchBytes = 64 << 20

    /// How many of `entries` (from the front) one transaction takes: up to `maxBatchRecords`,
    /// and until `maxBatchBytes` is reached (so one larger entry goes alone). Recovery's replay
    /// uses it too, so it never commits more than normal operation would.
    static func batchLength(_ entries: ArraySlice<SequencedEntry>) -> Int {
        var bytes = 0
        var count = 0
        while count < entries.count && count < maxBatchRecords && bytes < maxBatchBytes {
            bytes += entries[entries.startIndex + count].entry.memoryCost
            count += 1
        }
        return count
    }

    private struct State {
        var queue: [SequencedEntry] = []
        var scheduled = false
        var appliedSequence: UInt64
        var failure: ImageStoreError?
    }

    private let tier: DurableTier
    private let index: PendingIndex
    private let state: LockedValue<State>
    private let progress = NSCondition()
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

    init(tier: DurableTier, index: PendingIndex, appliedSequence: UInt64,
         released: @escaping @Sendable (Int) -> Void, stopped: @escaping @Sendable (ImageStoreError) -> Void,
         afterBatch: @escaping @Sendable ([SequencedEntry]) -> Void,
         changed: @escaping @Sendable ([SequencedEntry]) -> Void) {
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
        let schedule = state.withLock { state -> Bool in
            state.queue.append(contentsOf: entries)
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedule { tier.writer.async { self.drain() } }
    }

    /// The highest sequence number LMDB holds.
    var appliedSequence: UInt64 { state.withLock { $0.appliedSequence } }

    /// The error that stopped applying, if any.
    var failure: ImageStoreError? { state.withLock { $0.failure } }

    /// Blocks until LMDB holds everything up to `sequence`.
    /// - Throws: the applier's failure, if applying stopped.
    func waitUntilApplied(_ sequence: UInt64) throws(ImageStoreError) {
        progress.lock()
        defer { progress.unlock() }
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
        stopped(error)
        progress.lock()
        progress.broadcast()
        progress.unlock()
    }

    /// Applies queued batches until the queue is empty. Runs on the writer queue.
    private func drain() {
        while true {
            let batch: [SequencedEntry] = state.withLock { state in
                if state.failure != nil || state.queue.isEmpty {
                    state.scheduled = false
                    return []
                }
                let count = Self.batchLength(state.queue[...])
                if count == state.queue.count {  // the common case: take it all, no copying
                    defer { state.queue = [] }
                    return state.queue
                }
                let batch = Array(state.queue.prefix(count))
                state.queue.removeFirst(count)
                return batch
            }
            guard let last = batch.last?.sequence else { return }
            do {
                try tier.apply(batch)
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
