import Foundation

extension ImageStore {
    /// This process's counters and the store's gauges, read without I/O or waiting: cheap
    /// enough for a scrape every second, and it never throws (after `close()` it still answers,
    /// with the last values). See `StoreMetrics` for what each field counts.
    public var metrics: StoreMetrics {
        var metrics = StoreMetrics()
        metrics.getsFromLog = counters.total(.pendingLog)
        metrics.getsFromMemory = counters.total(.memory)
        metrics.getsFromDisk = counters.total(.disk)
        metrics.misses = counters.total(.miss)
        metrics.staleReads = counters.total(.stale)
        metrics.corruptReads = counters.corruptReads.load(ordering: .relaxed)
        metrics.puts = counters.puts.load(ordering: .relaxed)
        metrics.removes = counters.removes.load(ordering: .relaxed)
        metrics.validationRejections = counters.rejectionsByReason
        let memoryStats = memory?.statistics
        metrics.evictions = [
            .expired: counters.expiredEvictions.load(ordering: .relaxed),
            .budget: counters.budgetEvictions.load(ordering: .relaxed),
            .memory: memoryStats.map { $0.evictions.capacity + $0.evictions.costCap } ?? 0,
        ]
        if writes == nil { counters.refreshSizes(tier) }  // no applier keeps them: one short read
        metrics.entries = counters.entries.load(ordering: .relaxed)
        metrics.logicalBytes = counters.logicalBytes.load(ordering: .relaxed)
        metrics.fileBytes = FileSystem.allocatedBytes(atPath: path + "/data.mdb") ?? 0
        metrics.memoryEntries = memoryStats?.count ?? 0
        metrics.memoryBytes = memoryStats?.totalCost ?? 0
        if let writes {
            let status = writes.log.status()
            metrics.logSegments = status.closedSegments.count + 1
            metrics.logBytes = status.openSegmentBytes + status.closedSegments.count * configuration.logSegmentBytes
            metrics.unappliedRecords = Int(clamping: (status.nextSequence - 1) &- min(status.nextSequence - 1, writes.applier.appliedSequence))
            metrics.unappliedBytes = status.unappliedBytes
        }
        let log = counters.log
        metrics.applierLag = log.applierLag
        metrics.groupCommitBatchRecords = log.batchRecords.snapshot
        metrics.logFsyncSeconds = log.fsyncSeconds.snapshot
        metrics.checkpoints = log.checkpoints.load(ordering: .relaxed)
        metrics.checkpointFailures = log.checkpointFailures.load(ordering: .relaxed)
        metrics.backgroundFailures = counters.failuresByTask
        metrics.lastBackgroundFailure = counters.events.lastBackgroundFailure
        return metrics
    }

    /// Waits until the writer queue's work so far (the applier, background checkpoints) is done
    /// and the event handler has been handed every event it emitted. Not public API.
    package func drainEventsForTesting() {
        tier.drainWrites()
        counters.events.drain()
    }
}
