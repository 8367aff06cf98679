import Foundation
import LMDB
#if canImport(Glibc)
import Glibc
#endif

/// What a compaction did, or (dry run) would gain.
public struct CompactionReport: Sendable, Hashable {
    /// Disk bytes of `data.mdb` before and after (after = the estimate in a dry run).
    public var bytesBefore: Int
    public var bytesAfter: Int
    /// Expired entries purged first (or that would be).
    public var expiredPurged: Int
    /// Quarantined entries purged first (or that would be).
    public var quarantinePurged: Int
    /// Wall-clock seconds the compaction took.
    public var seconds: Double
    public var dryRun: Bool
}

extension ImageStore {
    /// How `compact` runs.
    public struct CompactionOptions: Sendable {
        /// Delete expired entries before copying.
        public var purgeExpired = false
        /// Delete the quarantine's contents before copying.
        public var purgeQuarantine = false
        /// Estimate the gain without changing anything.
        public var dryRun = false

        public init(purgeExpired: Bool = false, purgeQuarantine: Bool = false, dryRun: Bool = false) {
            self.purgeExpired = purgeExpired
            self.purgeQuarantine = purgeQuarantine
            self.dryRun = dryRun
        }
    }

    /// Reclaims the space LMDB never gives back, for a store no process has open for writing:
    /// recovers and checkpoints the log, optionally purges expired and quarantined entries,
    /// writes a compacted copy (`mdb_env_copy2` with `MDB_CP_COMPACT`) into a fresh sibling
    /// directory, fsyncs it (LMDB does not), then renames it over `data.mdb` and fsyncs the
    /// directory. A crash at any moment leaves the old or the new data file, whole.
    ///
    /// The process must not have the store open, and no other process may use it meanwhile;
    /// a process that has it open calls the instance method `compact(_:)` instead.
    /// - Throws: `writerLocked` (a service writes to it), `alreadyOpen`, storage errors; a
    ///   store still in use by readers of other processes is refused with `storage`.
    public static func compact(path: String, configuration: Configuration = .init(),
                               options: CompactionOptions = CompactionOptions()) throws(ImageStoreError) -> CompactionReport {
        var configuration = configuration
        configuration.readOnly = false
        configuration.sweepInterval = nil
        // Opening takes the writer lock and recovers the log; the instance method does the rest.
        let store = try ImageStore(path: path, configuration: configuration)
        defer { store.close() }
        return try store.compact(options)
    }

    /// Compacts the store this process has open, without closing it (`compact(path:)` opens a
    /// closed store and calls this).
    ///
    /// Puts and removes go on being logged and acknowledged (the pending index serves them);
    /// only applying them to LMDB waits. Reads of this process wait at the environment's gate
    /// for the moment the compacted file is swapped in. Refused while another process has the
    /// store open (it would keep the old file mapped).
    /// - Throws: `readOnly` (unless `dryRun`); `storage` when other processes read the store; storage errors.
    public func compact(_ options: CompactionOptions = CompactionOptions()) throws(ImageStoreError) -> CompactionReport {
        try checkOpen()
        let started = Date()
        let before = Self.fileBytes(path)
        // A dry run only reads, so it also works read-only, beside another process's writer.
        if options.dryRun {
            let stats = try statistics()
            return CompactionReport(
                bytesBefore: before, bytesAfter: max(stats.occupiedBytes - (options.purgeExpired ? stats.expiredBytes : 0), 0),
                expiredPurged: options.purgeExpired ? stats.expiredEntries : 0,
                quarantinePurged: options.purgeQuarantine ? try quarantinedEntries().count : 0,
                seconds: Date().timeIntervalSince(started), dryRun: true)
        }
        guard let writes else { throw .readOnly(path: path) }
        let expired = options.purgeExpired ? try sweepExpired().entries : 0
        let quarantined = options.purgeQuarantine ? try purgeQuarantine() : 0
        try writes.checkpoint()
        let copy = path + ".compacting-\(getpid())"
        try? FileManager.default.removeItem(atPath: copy)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try ImageStoreError.rethrowing(path: path, operation: "compacting") {
            // On the writer queue: the applier and housekeeping stay off LMDB until the swap is done.
            try tier.writer.sync {
                let environment = tier.environment
                let others = environment.readerTable().filter { !$0.contains(" \(getpid()) ") }
                guard others.isEmpty else {
                    throw ImageStoreError.storage(path: path, detail: "other processes are reading the store (\(others.count) reader slot(s)); compact it when they are done")
                }
                try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: false)
                try environment.copy(to: copy, compact: true)
                try Self.syncFile(copy + "/data.mdb")
                try Self.syncFile(copy)
                let expected = tier.databases
                let reopened = try environment.replaceDataFile(with: copy + "/data.mdb") { txn in
                    try DurableTier.openDatabases(txn, isNew: false, readOnly: false, path: path)
                }
                // Invariant: LMDB numbers databases in the order they are opened, so the
                // handles the store holds are valid for the new file.
                precondition(reopened == expected, "database handles changed across compaction")
            }
        }
        return CompactionReport(bytesBefore: before, bytesAfter: Self.fileBytes(path), expiredPurged: expired,
                                quarantinePurged: quarantined, seconds: Date().timeIntervalSince(started), dryRun: false)
    }

    private static func fileBytes(_ path: String) -> Int {
        var status = stat()
        return stat(path + "/data.mdb", &status) == 0 ? Int(status.st_blocks) * 512 : 0
    }

    /// fsyncs a file or directory.
    private static func syncFile(_ path: String) throws(ImageStoreError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .storage(path: path, detail: "open for fsync: \(String(cString: strerror(errno)))") }
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw .storage(path: path, detail: "fsync: \(String(cString: strerror(errno)))") }
    }
}
