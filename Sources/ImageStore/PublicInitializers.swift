import Foundation

// Public initialisers for the value types the store and loader return, so that code using
// imgstore can build them in its own tests (with a fake `ImageLoaderStore`, say). Each starts
// from zero / empty; set the fields a test cares about.

extension StoreStatistics {
    /// All counts zero, no disk budget.
    public init() {
        self.init(
            entryCount: 0, logicalBytes: 0, fileBytes: 0, usedBytes: 0, mapSize: 0, maxMapSize: 0, puts: 0, hits: 0,
            misses: 0, corruptReads: 0, expiredEntries: 0, expiredBytes: 0, occupiedBytes: 0, maxDiskBytes: nil,
            expiredEvictions: 0, budgetEvictions: 0, memoryEntries: 0, memoryBytes: 0, memoryCostLimit: 0, memoryHits: 0,
            memoryMisses: 0, memoryEvictions: 0)
    }
}

extension ImageLoader.Statistics {
    /// All counts zero.
    public init() {
        self.init(requests: 0, notModified: 0, coalescedLoads: 0, negativeHits: 0, staleServed: 0, bytesDownloaded: 0)
    }
}

extension CompactionReport {
    /// An empty report.
    public init() {
        self.init(bytesBefore: 0, bytesAfter: 0, expiredPurged: 0, quarantinePurged: 0, duration: .zero, dryRun: false)
    }
}

extension VerifyReport {
    /// A report of `problems` (none: a clean store).
    public init(problems: [VerifyProblem] = []) {
        self.init(problems: problems, entriesChecked: 0, logSegmentsChecked: 0, tornLogBytes: 0)
    }
}

extension VerifyProblem {
    /// A problem of `kind` found in `subject`, not repaired.
    public init(_ kind: Kind, subject: String, detail: String) {
        self.init(kind: kind, subject: subject, detail: detail, repaired: false)
    }
}
