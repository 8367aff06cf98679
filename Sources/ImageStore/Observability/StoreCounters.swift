import Dispatch
import Foundation
import Locking
import Synchronization

/// This process's counters and gauges for one store, kept as it runs (never from a scan), and
/// its event sink. `ImageStore.metrics` reads them.
final class StoreCounters: Sendable {
    /// Slots of `reads`, the counters the read path bumps.
    enum Read: Int, CaseIterable {
        case pendingLog, memory, disk, miss, stale
    }

    let events: EventSink
    /// Gets by outcome, striped: the memory-hit path must scale with threads.
    let reads = StripedCounters()
    let log = LogMetrics()

    // Writes and housekeeping: each of these sits beside a lock, a log append or an LMDB
    // transaction already, so one shared atomic costs nothing there.
    let puts = Atomic<Int>(0)
    let removes = Atomic<Int>(0)
    let corruptReads = Atomic<Int>(0)
    let expiredEvictions = Atomic<Int>(0)
    let budgetEvictions = Atomic<Int>(0)
    private let rejections = LockedValue<[String: Int]>([:])
    private let failures: LockedValue<[StoreEvent.BackgroundTask: Int]>

    // Gauges of the durable tier, refreshed after each applied batch and sweep (`refreshSizes`).
    let entries = Atomic<Int>(0)
    let logicalBytes = Atomic<Int>(0)

    init(eventHandler: (@Sendable (StoreEvent) -> Void)?, clock: @escaping @Sendable () -> Date) {
        let failures = LockedValue<[StoreEvent.BackgroundTask: Int]>([:])
        self.failures = failures
        events = EventSink(handler: eventHandler, clock: clock) { task in
            failures.withLock { $0[task, default: 0] += 1 }
        }
    }

    /// Counts a read (cheap: the calling thread's own stripe).
    @inline(__always)
    func count(_ read: Read) { reads.increment(read.rawValue) }

    func total(_ read: Read) -> Int { reads.total(read.rawValue) }

    /// Counts a put refused by the validator, by its kind (`ImageValidationError.Kind`).
    func rejected(_ reason: String) { rejections.withLock { $0[reason, default: 0] += 1 } }

    var rejectionsByReason: [String: Int] { rejections.withLock { $0 } }
    var failuresByTask: [StoreEvent.BackgroundTask: Int] { failures.withLock { $0 } }

    /// Counts an eviction batch and reports it (no event for an empty one).
    func evicted(_ reason: StoreEvent.EvictionReason, entries: Int, bytes: Int) {
        guard entries > 0 else { return }
        if reason == .budget {
            budgetEvictions.wrappingAdd(entries, ordering: .relaxed)
        } else {
            expiredEvictions.wrappingAdd(entries, ordering: .relaxed)
        }
        events.emit(.evicted(reason, entries: entries, bytes: bytes))
    }

    /// Reads the entry count and logical bytes (one short read transaction, no scan). A
    /// failure keeps the old values and is reported.
    func refreshSizes(_ tier: DurableTier) {
        events.attempt(.measuring) { () throws(ImageStoreError) in
            let (count, bytes) = try tier.counts()
            entries.store(count, ordering: .relaxed)
            logicalBytes.store(bytes, ordering: .relaxed)
        }
    }
}

/// The write-ahead log's metrics: group-commit batches, fsync latency, checkpoints, and how far
/// the applier is behind.
final class LogMetrics: Sendable {
    /// Records per group-commit batch: 1, 2, 4, … 4096 (`WriteAheadLog.maxBatchRecords`).
    let batchRecords = Histogram(bounds: (0...12).map { 1 << $0 })
    /// Seconds per log fsync, from 50 µs to 2.5 s.
    let fsyncSeconds = Histogram(
        bounds: [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000, 2_500_000]
            .map { $0 * 1_000 },
        scale: 1e-9)
    let checkpoints = Atomic<Int>(0)
    let checkpointFailures = Atomic<Int>(0)
    /// Written batches not yet applied: each one's last sequence and when it was written.
    private let unapplied = LockedValue<[(sequence: UInt64, writtenAt: UInt64)]>([])

    /// The leader wrote a batch (in sequence order).
    func written(_ batch: [SequencedEntry]) {
        guard let last = batch.last?.sequence else { return }
        batchRecords.record(batch.count)
        let now = DispatchTime.now().uptimeNanoseconds
        unapplied.withLock { $0.append((last, now)) }
    }

    /// The applier committed everything up to `sequence`.
    func applied(through sequence: UInt64) {
        unapplied.withLock { batches in
            let done = batches.prefix { $0.sequence <= sequence }.count
            batches.removeFirst(done)
        }
    }

    /// How long ago the oldest written batch the applier has not reached was written; zero
    /// when it has caught up.
    var applierLag: Duration {
        guard let oldest = unapplied.withLock({ $0.first?.writtenAt }) else { return .zero }
        return .nanoseconds(Int64(clamping: DispatchTime.now().uptimeNanoseconds &- oldest))
    }

    /// Times one fsync of the log.
    func timedSync<E: Error>(_ body: () throws(E) -> Void) throws(E) {
        let start = DispatchTime.now().uptimeNanoseconds
        defer { fsyncSeconds.record(Int(clamping: DispatchTime.now().uptimeNanoseconds &- start)) }
        try body()
    }
}

extension StoreCounters {
    /// Reports what a repair set aside in the quarantine (entries, and blobs without one).
    func quarantined(_ findings: [DurableTier.Finding]) {
        let count = findings.count { $0.fix == .quarantineEntry || $0.fix == .quarantineBlob }
        if count > 0 { events.emit(.quarantined(entries: count)) }
    }
}
