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
    /// How long the compaction took (wall clock).
    public var duration: Duration
    public var dryRun: Bool

    /// `duration` in seconds.
    @available(*, deprecated, renamed: "duration", message: "use duration, a Duration")
    public var seconds: Double {
        get { duration.seconds }
        set { duration = Duration(exactlySeconds: newValue) ?? .zero }
    }
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
    /// writes a compacted copy (`mdb_env_copyfd2` with `MDB_CP_COMPACT`) into the store
    /// directory itself (so it is on the same file system, even when the directory is a mount
    /// point), fsyncs it (LMDB does not), then renames it over `data.mdb` and fsyncs the
    /// directory. A crash at any moment leaves the old or the new data file, whole; the copy a
    /// killed compaction leaves behind is removed by the next open or compaction.
    ///
    /// The process must not have the store open, and no other process may have it open at all
    /// (see `compact(_:)`); a process that has it open calls the instance method instead.
    /// - Throws: `writerLocked` (a service writes to it), `alreadyOpen`, `storage` when another
    ///   process has the store open (reading or idle), storage errors.
    public static func compact(path: String, configuration: Configuration = .init(),
                               options: CompactionOptions = CompactionOptions()) throws(ImageStoreError) -> CompactionReport {
        var configuration = configuration
        configuration.readOnly = false
        configuration.sweepPeriod = nil
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
    /// for the moment the compacted file is swapped in.
    ///
    /// Refused while any other process has the store open, even idle or read-only: it would
    /// keep the old file mapped. That is proved with the lock LMDB itself takes on `lock.mdb`
    /// (`Environment.otherProcess()`), not with the reader table, which does not show idle
    /// processes; the same lock makes other processes that open the store meanwhile wait for
    /// the new file. Reader slots left by dead processes are cleared first.
    /// - Throws: `readOnly` (unless `dryRun`); `storage` when another process has the store open (its pid is
    ///   named); storage errors (the store then still holds its old data file).
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
                duration: .seconds(Date().timeIntervalSince(started)), dryRun: true)
        }
        guard let writes else { throw .readOnly(path: path) }
        try refuseWhileShared()  // before purging anything
        let expired = options.purgeExpired ? try sweepExpired().entryCount : 0
        let quarantined = options.purgeQuarantine ? try purgeQuarantine() : 0
        try writes.checkpoint()
        try ImageStoreError.rethrowing(path: path, operation: "compacting") {
            // On the writer queue: the applier and housekeeping stay off LMDB until the swap is done.
            try tier.writer.sync {
                try CompactionLeftovers.remove(forStoreAt: path)
                try tier.environment.clearStaleReaders()
                try refuseWhileShared()
                try swapIn(copyOf: tier.environment)
            }
        }
        let report = CompactionReport(bytesBefore: before, bytesAfter: Self.fileBytes(path), expiredPurged: expired,
                                      quarantinePurged: quarantined, duration: .seconds(Date().timeIntervalSince(started)), dryRun: false)
        counters.events.emit(.compacted(report))
        return report
    }

    /// Throws when another process has the store open.
    func refuseWhileShared() throws(ImageStoreError) {
        let other: pid_t?
        do { other = try tier.environment.otherProcess() } catch {
            throw .from(error, path: path, operation: "checking for other processes", maxMapSize: 0)
        }
        if let other { throw Self.inUse(path, by: "process \(other)") }
    }

    private static func inUse(_ path: String, by holder: String) -> ImageStoreError {
        .storage(path: path, detail: "\(holder) has the store open (it would keep reading the old data file); compact it when no other process has it open")
    }

    /// Writes a compacted copy of `source` (the store's own environment, or salvage's fresh
    /// one), syncs it and swaps it in for the store's data file (on the writer queue).
    func swapIn(copyOf source: Environment) throws {
        let environment = tier.environment
        let copy = CompactionLeftovers.copyPath(forStoreAt: path)
        let fd = Glibc.open(copy, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ImageStoreError.storage(path: path, detail: "cannot create \(copy): \(String(cString: strerror(errno)))") }
        var installed = false
        defer {
            Glibc.close(fd)
            if !installed { unlink(copy) }
        }
        try source.copy(toDescriptor: fd, compact: true)
        try FileSystem.sync(descriptor: fd, path: copy)
        let expected = tier.databases
        let reopened: [Database]
        do {
            reopened = try environment.replaceDataFile(install: {
                guard rename(copy, path + "/data.mdb") == 0 else {
                    throw ImageStoreError.storage(path: path, detail: "cannot rename \(copy) over data.mdb: \(String(cString: strerror(errno)))")
                }
                installed = true
                do { try FileSystem.sync(path) } catch {
                    throw ImageStoreError.storage(path: path, detail: "the compacted data file is in place, but making its rename durable failed (\(error)); a crash may bring back the old file")
                }
            }) { txn in
                try DurableTier.openDatabases(txn, isNew: false, readOnly: false, path: path)
            }
        } catch {
            // The old file (or what `install` left) is open again on a new handle, unpinned,
            // while `lmdb-checkpoint` may name it: a checkpoint before any commit.
            try tier.sync()
            if case LMDBError.busy = error { throw Self.inUse(path, by: "another process") }
            throw error
        }
        // Invariant: LMDB numbers databases in the order they are opened, so the
        // handles the store holds are valid for the new file.
        precondition(reopened == expected, "database handles changed across compaction")
        // The new file's checkpoint: until it is kept and pinned, commits sync.
        try tier.sync()
    }

    private static func fileBytes(_ path: String) -> Int { FileSystem.allocatedBytes(atPath: path + "/data.mdb") ?? 0 }
}
