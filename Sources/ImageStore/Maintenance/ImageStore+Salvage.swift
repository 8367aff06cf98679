import Foundation
import LMDB

extension ImageStore {
    /// Saves what a damaged tree still holds (`verify --repair`): copies every readable entry
    /// into a fresh LMDB environment built inside the store directory
    /// (`salvage.compacting-<pid>`), then swaps a compacted copy of it in for `data.mdb` exactly
    /// as compaction does: refused while another process has the store open, and a crash at
    /// any moment leaves the old or the new data file whole (the next open removes the
    /// left-over directory). Runs on the writer queue, after the log settled, so nothing is
    /// applied meanwhile. The log's records after LMDB's applied-seq (those an open did not
    /// replay into the damaged file) are replayed into the fresh one before the swap.
    ///
    /// Invariant: every acknowledged write is in the fresh data file or in a log record after
    /// its applied-seq, so a salvage loses no acknowledged write that the log still holds.
    /// - Returns: the problem as `verify` reports it, saying what was saved and lost. It is
    ///   repaired even when entries were lost, as fsck counts an inode it cleared as corrected:
    ///   the store is consistent again (`verify` finds nothing), and what was lost cannot be
    ///   got back by running anything again (`imgstore-admin verify --repair` exits 1).
    /// - Throws: `storage` when another process has the store open; errors writing the copy
    ///   (the old data file is then untouched).
    func salvage(after damage: ImageStoreError, now: Int64) throws -> VerifyProblem {
        try refuseWhileShared()
        try CompactionLeftovers.remove(forStoreAt: path)
        let directory = CompactionLeftovers.salvagePath(forStoreAt: path)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer {
            configuration.salvageWillRemoveScratch?(directory)
            // The repair is done either way: a directory left behind is removed by the next
            // open or compaction, and the event handler hears of it (it takes disk space).
            counters.events.attempt(.removingScratch) { () throws(ImageStoreError) in
                do { try FileManager.default.removeItem(atPath: directory) } catch {
                    throw .storage(path: directory, detail: "removing a salvage's scratch directory failed (the next open or compaction removes it): \(error)")
                }
            }
        }
        var options = EnvironmentOptions()
        options.maxMapSize = tier.maxMapSize
        options.initialMapSize = min(options.initialMapSize, tier.maxMapSize)
        let count: DurableTier.SalvageCount
        let replayed: Int
        do {  // `fresh` is closed at the end of this block, before its directory goes
            let fresh = try Environment.open(path: directory, options: options)
            let databases = try fresh.write { txn in try DurableTier.openDatabases(txn, isNew: true, readOnly: false, path: directory) }
            // LMDB's own applied-seq: what the damaged file holds. (The applier's may be ahead
            // of it: a writable open of a damaged file does not replay the log into it.)
            let applied = try lmdbAppliedSequence()
            count = try tier.salvage(into: fresh, databases: databases, appliedSequence: applied, now: now)
            replayed = try replayLog(into: fresh, databases: databases, after: applied)
            try swapIn(copyOf: fresh)
        }
        memory?.invalidateAll()
        try tier.checkStructure()  // the fresh file's: writes refused for a damaged one are taken again
        let found = if case let .corruptStore(_, detail) = damage { detail } else { "\(damage)" }
        let detail = "\(found); \(count.copied) readable entries copied into a fresh data file"
            + (count.quarantined > 0 ? ", \(count.quarantined) damaged ones set aside in the quarantine" : "")
            + (count.unreadable > 0 ? ", \(count.unreadable) entries lost (named by another tree, their records could not be read)" : "")
            + (replayed > 0 ? ", \(replayed) log records not yet applied replayed into it" : "")
        return VerifyProblem(kind: .damagedTree, subject: "data.mdb", detail: detail, repaired: true)
    }

    /// LMDB's applied-seq, or the applier's when the damage hides LMDB's.
    private func lmdbAppliedSequence() throws(ImageStoreError) -> UInt64 {
        do { return try tier.appliedSequence() } catch {
            guard case .corruptStore = error, let writes else { throw error }
            return writes.applier.appliedSequence
        }
    }

    /// Replays every log record after `applied` into `fresh`, so no acknowledged write is lost
    /// with the damaged file: an open that found the file damaged replays nothing into it, and
    /// the records wait in the log (no segment is retired meanwhile, `WritePath`). Reads the
    /// segments as `verify` reads them (`LogSnapshot`), changing no file.
    /// - Returns: how many records it replayed.
    /// - Throws: `walCorrupt` for damage in the log; errors writing `fresh`.
    private func replayLog(into fresh: Environment, databases: [Database], after applied: UInt64) throws(ImageStoreError) -> Int {
        let snapshot = try LogSnapshot.read(directory: path)
        let recovery = LogRecovery(directory: path, fileSystem: snapshot, salvage: configuration.salvageDamagedLog)
        var replayed = 0
        _ = try recovery.replay(appliedSequence: applied) { (batch) throws(ImageStoreError) in
            try tier.replay(batch, into: fresh, databases: databases)
            replayed += batch.count
        }
        return replayed
    }
}
