import Foundation
import Locking
import Synchronization

/// The store's own housekeeping on the durable tier: persisting access times, sweeping
/// expired entries, and holding the disk budget. Every method runs on the writer queue (the
/// single LMDB writer), in short transactions.
final class StoreMaintenance: Sendable {
    let tier: DurableTier
    let policy: ExpiryPolicy
    let tracker = AccessTracker()
    let counters: StoreCounters
    private let clock: @Sendable () -> Int64
    /// Told which entries a sweep or eviction removed, or whose sliding expiry moved, so the
    /// memory tier drops its copies of them.
    private let onRemoved: @Sendable ([String]) -> Void
    /// Whether the budget is still to be enforced on the state the store opened with
    /// (`enforceBudgetBeforeFirstWrite`); true only with a budget.
    private let openingBudgetPending: LockedValue<Bool>
    // The timer is only created, resumed and cancelled under this lock.
    private let timerLock = NSLock()
    private nonisolated(unsafe) var timer: DispatchSourceTimer?

    init(tier: DurableTier, policy: ExpiryPolicy, counters: StoreCounters, clock: @escaping @Sendable () -> Int64,
         onRemoved: @escaping @Sendable ([String]) -> Void) {
        self.tier = tier
        self.policy = policy
        self.counters = counters
        self.clock = clock
        self.onRemoved = onRemoved
        openingBudgetPending = LockedValue(policy.budget != nil)
    }

    /// Writes noted access times to LMDB. Sliding entries whose expiry moved are dropped from
    /// the memory tier: its copy holds the old expiry, and once the tracker has handed the read
    /// over it would serve a fresh entry as stale.
    func persistAccess() throws(ImageStoreError) {
        dispatchPrecondition(condition: .onQueue(tier.writer))
        let slid = try tier.persistAccess(tracker.drain())
        if !slid.isEmpty { onRemoved(slid) }
    }

    /// Removes every expired entry (access times first, so sliding entries read lately live on),
    /// and clears reader slots left by dead processes: lmdb.h asks for that periodically, as a
    /// stale slot pins an old snapshot and makes the file grow.
    func sweep(dryRun: Bool) throws(ImageStoreError) -> SweepReport {
        dispatchPrecondition(condition: .onQueue(tier.writer))
        if !dryRun {
            try persistAccess()
            _ = try ImageStoreError.rethrowing(path: tier.path, operation: "clearing stale reader slots") {
                try tier.environment.clearStaleReaders()
            }
        }
        let removal = try tier.sweepExpired(now: clock(), batchSize: policy.sweepBatchSize, dryRun: dryRun)
        if !dryRun {
            counters.evicted(.expired, entries: removal.cacheKeys.count, bytes: removal.bytes)
            onRemoved(removal.cacheKeys)
            counters.refreshSizes(tier)
        }
        return SweepReport(entryCount: removal.cacheKeys.count, byteCount: removal.bytes, batches: removal.batches)
    }

    /// Refuses a put whose entry cannot fit under the budget: alone in the store, with the
    /// store's own pages (`DurableTier.budgetFootprint`), it would be over the low watermark
    /// eviction brings the store down to, so the eviction after it is applied would remove it
    /// too. Runs on the caller's thread before anything is logged or evicted.
    /// - Throws: `entryOverDiskBudget`; `storage` when LMDB cannot be read.
    func admit(_ record: EntryRecord, blobBytes: Int) throws(ImageStoreError) {
        guard let budget = policy.budget else { return }
        let needed = try tier.budgetFootprint(of: record, blobBytes: blobBytes)
        guard needed <= budget.low else {
            throw .entryOverDiskBudget(byteCount: blobBytes, needed: needed, limit: budget.low, maxDiskBytes: budget.high)
        }
    }

    /// Enforces the budget once on the state the store opened with (one opened with a budget
    /// it exceeds, or that filled its disk): called by the first write the store lets through,
    /// after that write's own checks, so a refused put evicts nothing, and by the first sweep
    /// or checkpoint (on a full disk no put gets as far as the applier, whose batches enforce
    /// it from then on). An open and close that write nothing evict nothing. On the caller's
    /// thread, which waits for the writer queue (and an eviction, if one is due) once; writes
    /// racing it wait for it. Failures go to the event handler, as after an applied batch.
    func enforceBudgetBeforeFirstWrite() {
        openingBudgetPending.withLock { pending in
            guard pending else { return }
            pending = false
            tier.writer.sync {
                _ = counters.events.attempt(.diskBudget) { () throws(ImageStoreError) in try enforceBudget() }
            }
        }
    }

    /// When the pages in use (the quarantine's excluded) exceed the budget's high watermark,
    /// evicts the least recently accessed entries until they are under the low one. Called
    /// after every applied batch, and before the first write after an open
    /// (`enforceBudgetBeforeFirstWrite`). Eviction frees space but needs a few new pages
    /// first, so on a full disk it releases the space reserve (`SpaceReserve`) before it starts.
    func enforceBudget() throws(ImageStoreError) {
        dispatchPrecondition(condition: .onQueue(tier.writer))
        guard let budget = policy.budget, try tier.budgetedBytes() > budget.high else { return }
        SpaceReserve.releaseIfFull(in: tier.path)
        try persistAccess()
        let removal = try tier.evict(downTo: budget.low, batchSize: policy.sweepBatchSize)
        counters.evicted(.budget, entries: removal.cacheKeys.count, bytes: removal.bytes)
        onRemoved(removal.cacheKeys)
    }

    /// Sweeps (and persists access times) every `period` of wall time until `stop`.
    func startSweeping(every period: Duration) {
        let source = DispatchSource.makeTimerSource(queue: tier.writer)
        let interval = period.seconds
        source.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(Int(period.milliseconds / 10)))
        source.setEventHandler { [weak self] in
            guard let self else { return }
            counters.events.attempt(.sweep) { () throws(ImageStoreError) in _ = try sweep(dryRun: false) }
        }
        timerLock.withLock {
            timer = source
            source.resume()
        }
    }

    func stop() {
        timerLock.withLock {
            timer?.cancel()
            timer = nil
        }
    }
}
