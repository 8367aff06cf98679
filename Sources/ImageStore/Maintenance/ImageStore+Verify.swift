import Foundation

extension ImageStore {
    /// What `verify` checks and whether it repairs.
    public struct VerifyOptions: Sendable {
        /// Fully decode PNG and JPEG images instead of checking their structure.
        public var deep = false
        /// Fix what can be fixed (needs a writable store): bad entries to the quarantine,
        /// indexes rebuilt, counters recomputed. A damaged tree is salvaged: every readable
        /// entry is copied into a fresh data file (refused while another process has the store
        /// open), and what its damaged pages hid is lost.
        public var repair = false
        /// Entries per read transaction; smaller holds old pages for less time.
        public var chunkSize = 512
        /// Called with the number of entries checked so far.
        public var progress: (@Sendable (Int) -> Void)?

        public init(deep: Bool = false, repair: Bool = false) {
            self.deep = deep
            self.repair = repair
        }
    }

    /// Checks the store the way `fsck` checks a file system: every entry against its bytes
    /// (checksum, and image validation for entries validated on put), that a lookup reaches it
    /// (its key is the hash of its cache key and, with `Configuration.keyFunction` set, its
    /// cache key is that function's of its URL), the expiry and access indexes against the
    /// entries, the counters, LMDB's free list and the structure of every tree (what a writable
    /// open checks before it takes any write), and the write-ahead log's segments.
    ///
    /// Safe on a read-only store while another process writes: it reads consistent snapshots in
    /// short chunks and never takes the writer lock.
    /// - Throws: `readOnly` when asked to repair a read-only store; `storage` when a salvage is
    ///   refused because another process has the store open; `corruptStore` when a read-only
    ///   check meets a damaged tree; storage errors.
    public func verify(_ options: VerifyOptions = VerifyOptions()) throws(ImageStoreError) -> VerifyReport {
        try checkOpen()
        if options.repair && writes == nil { throw .readOnly(path: path) }
        try writes?.settle()
        var tierOptions = DurableTier.VerifyOptions()
        tierOptions.validation = options.deep ? .deep : .structure
        tierOptions.chunkSize = max(1, options.chunkSize)
        tierOptions.keyFunction = configuration.keyFunction
        if let progress = options.progress { tierOptions.onProgress = progress }

        let (findings, checked): ([DurableTier.Finding], Int)
        var salvaged: [VerifyProblem] = []
        if options.repair {
            (findings, checked, salvaged) = try ImageStoreError.rethrowing(path: path, operation: "verifying and repairing") {
                try tier.writer.sync {
                    let now = Self.milliseconds(configuration.clock())
                    do {
                        let (found, checked) = try verifyAndRepair(tierOptions, now: now)
                        return (found, checked, [VerifyProblem]())
                    } catch let error as ImageStoreError {
                        // A damaged tree: save what is readable into a fresh data file, then check that.
                        guard case .corruptStore = error else { throw error }
                        let salvage = try salvage(after: error, now: now)
                        let (found, checked) = try verifyAndRepair(tierOptions, now: now)
                        return (found, checked, [salvage])
                    }
                }
            }
        } else {
            (findings, checked) = try tier.verify(tierOptions)
        }
        var problems = salvaged + findings.map { finding in
            var problem = finding.problem
            problem.repaired = options.repair && finding.fix != .none
            return problem
        }
        // Damage the log recovery skipped when this store was opened with salvage: repaired.
        problems += recoveryReport.salvaged.map {
            VerifyProblem(kind: .damagedLog, subject: "write-ahead log", detail: $0, repaired: true)
        }
        let log = try checkLog()
        problems += log.problems
        return VerifyReport(problems: problems, entriesChecked: checked, logSegmentsChecked: log.segments, tornLogBytes: log.torn)
    }

    /// Verifies, then repairs what was found (on the writer queue).
    private func verifyAndRepair(_ options: DurableTier.VerifyOptions, now: Int64) throws(ImageStoreError) -> ([DurableTier.Finding], Int) {
        let result = try tier.verify(options)
        if !result.findings.isEmpty {
            memory?.invalidate(try tier.repair(result.findings, now: now))
            // Not in the log: durable (and kept) now, or a crash would undo it.
            try tier.sync()
            counters.quarantined(result.findings)
        }
        return result
    }

    /// Reads of the log `checkLog` makes at most while apparent damage keeps moving.
    static let logCheckAttempts = 8

    /// Reads the log's segments without applying anything, reporting damage before valid
    /// records. (A writable store's own log was just recovered; this re-reads what it wrote since.)
    ///
    /// Safe beside a live writer, in this process or another, without coordinating with it:
    /// - The segments are read first (`LogSnapshot`), LMDB's applied-seq after. A checkpoint
    ///   retires only segments whose records are all at or below applied-seq, so a segment that
    ///   was retired (or recycled and partly overwritten) before or while it was read held only
    ///   records at or below the applied-seq read afterwards: recovery's rules count the gap or
    ///   the damage it leaves as applied, never as loss.
    /// - A segment being appended may be read half-written: a page not yet written, and a later
    ///   one already written. That looks like damage followed by a valid record. But the writer
    ///   writes in order, so once that later record was seen, every byte before it was final.
    ///   So apparent damage is judged against a fresh read: reported only when the next read
    ///   finds the same damage in the same place (real damage stays put; a torn read does not
    ///   come back, the bytes it missed are written by then). Damage that keeps moving is
    ///   reported after `logCheckAttempts` reads.
    private func checkLog() throws(ImageStoreError) -> (problems: [VerifyProblem], segments: Int, torn: Int) {
        var previous: String?
        for attempt in 1...Self.logCheckAttempts {
            let snapshot = try LogSnapshot.read(directory: path, willOpen: configuration.verifyWillOpenLogSegment)
            let applied = try tier.appliedSequence()  // after the segments were read: see above
            let recovery = LogRecovery(directory: path, fileSystem: snapshot, salvage: false)
            do {
                let (report, _) = try recovery.replay(appliedSequence: applied) { _ in }
                return ([], report.segmentsRead, report.tornBytesDropped)
            } catch {
                guard case let .walCorrupt(_, detail) = error else { throw error }
                if detail == previous || attempt == Self.logCheckAttempts {
                    return ([VerifyProblem(kind: .damagedLog, subject: "write-ahead log", detail: detail, repaired: false)], 0, 0)
                }
                previous = detail
            }
        }
        preconditionFailure("the loop returns on its last attempt")
    }

    /// What `verify --repair` set aside.
    public func quarantinedEntries() throws(ImageStoreError) -> [QuarantinedEntry] {
        try checkOpen()
        return try tier.quarantineContents()
    }

    /// Deletes the quarantine's contents; returns how many entries it held.
    @discardableResult
    public func purgeQuarantine() throws(ImageStoreError) -> Int {
        try checkOpen()
        guard writes != nil else { throw .readOnly(path: path) }
        return try ImageStoreError.rethrowing(path: path, operation: "purging the quarantine") {
            try tier.writer.sync {
                let purged = try tier.purgeQuarantine()
                try tier.sync()  // not in the log: durable now, or a crash would undo it
                return purged
            }
        }
    }

    /// The problems `verify` finds, as sentences: what every test checks last. Not public API.
    package func consistencyProblems() throws(ImageStoreError) -> [String] {
        try verify().problems.map(\.description)
    }
}
