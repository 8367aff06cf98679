import Foundation
import LMDB
import Locking

/// The LMDB side of the store: entries and blobs in one environment, laid out as
/// `StoreFormat.swift` describes. Reads run on the caller's thread in their own snapshot;
/// every write runs on `writer`, one serial queue, so LMDB's writer lock is always taken and
/// released on the same thread and writers never contend for it.
final class DurableTier: Sendable {
    let environment: Environment
    let path: String
    let maxMapSize: Int
    let meta: Database
    let entries: Database
    let blobs: Database
    let expiry: Database
    let access: Database
    let quarantine: Database
    /// The only queue that writes to LMDB (the log applier runs on it).
    let writer = DispatchQueue(label: "imgstore.writer")
    let isReadOnly: Bool
    /// A test's replacement of the URL hash (`Configuration.keyHasher`); nil for XXH3-128
    /// (`Checksum.key`), which lookups compute without an allocation (`keyHash`).
    let customKeyHasher: (@Sendable (String) -> [UInt8])?
    /// The URL hash as bytes: an entry's key is this of its cache key.
    var keyHasher: @Sendable (String) -> [UInt8] { customKeyHasher ?? Checksum.key }
    /// Why every write is refused before it is logged (`corruptStore`: LMDB's free list or a
    /// page of a tree is damaged, so a commit may fail); nil while writes are taken. See
    /// DurableTier+WriteCheck.swift.
    let writeRefusal = LockedValue<ImageStoreError?>(nil)
    /// What `CheckpointFile` holds (what the last checkpoint kept), nil before the first.
    private let checkpoint: LockedValue<CheckpointFile.Kept?>
    /// Whether `sync` keeps checkpoints, so commits between them skip their sync
    /// (`LMDB/MetaPages.swift`): a writer whose reader table has room for the pin.
    private let keepsCheckpoints: Bool
    /// The fewest reader slots (`Configuration.maxReaders`) with which the writer spends one on
    /// pinning the checkpointed snapshot; with fewer, every commit syncs its pages.
    static let minimumReadersForCheckpoints = 8

    private init(environment: Environment, path: String, maxMapSize: Int, databases: [Database],
                 keyHasher: (@Sendable (String) -> [UInt8])?, checkpoint: CheckpointFile.Kept?, keepsCheckpoints: Bool) {
        self.environment = environment
        self.checkpoint = LockedValue(checkpoint)
        self.keepsCheckpoints = keepsCheckpoints
        self.isReadOnly = environment.options.readOnly
        self.path = path
        self.maxMapSize = maxMapSize
        (meta, entries, blobs, expiry, access) = (databases[0], databases[1], databases[2], databases[3], databases[4])
        quarantine = databases[5]
        customKeyHasher = keyHasher
    }

    // MARK: - Opening

    /// Opens the store directory at `path`, creating it (and the store) when missing, or
    /// finishing a creation a crash cut off (`StoreCreation`). A created store is durable
    /// before this returns. A writable open takes the writer lock before it changes any file
    /// and before LMDB's first write transaction, and returns it (the caller keeps it for as
    /// long as it writes): a second writer is told at once who holds the store, instead of
    /// waiting in `mdb_txn_begin` behind a writer that may be stopped. A read-only open takes
    /// no lock and never waits for the writer.
    /// - Throws: `notADirectory`, `notWritable`, `notAStore` (nothing of imgstore's is there),
    ///   `newerFormat`, `corruptStore` (imgstore's databases or log without its format record;
    ///   a damaged or cut data file), `storage` (a read-only open of an unfinished creation
    ///   with a log; a failed sync), `writerLocked`.
    static func open(path: String, configuration: ImageStore.Configuration) throws(ImageStoreError) -> (tier: DurableTier, writerLock: WriterLock?) {
        let readOnly = configuration.readOnly
        let dataFile = StoreCreation.dataFile(in: path)
        var isNew = dataFile != .present
        if isNew, let found = StoreDirectory.describeForeignContents(path) {
            throw .notAStore(path: path, found: found)
        }
        if dataFile == .blank && readOnly { throw StoreCreation.unfinished(path: path) }
        if isNew && readOnly { throw .notAStore(path: path, found: "no store yet (read-only opens do not create one)") }
        // Invariant: no file of the store changes, and no LMDB write transaction (not even
        // opening the databases) runs, before this.
        let writerLock = readOnly ? nil : try WriterLock(directory: path)
        if dataFile == .blank { try StoreCreation.discardBlankDataFile(in: path) }
        let (checkpoint, restoringLock, restore) = isNew ? (nil, nil, nil) : try keptCheckpoint(path: path, readOnly: readOnly)
        var options = EnvironmentOptions()
        options.initialMapSize = configuration.initialMapSize
        options.maxMapSize = max(configuration.maxMapSize, configuration.initialMapSize)
        options.maxReaders = UInt32(clamping: configuration.maxReaders)
        options.writeMap = configuration.writeMap
        options.readOnly = readOnly
        // The log's checkpoint syncs LMDB explicitly (`mdb_env_sync(env, 1)`) before it drops
        // any record, so commits need not sync the meta page. Not MDB_NOSYNC at the open: only
        // a checkpoint that keeps its meta pages and pins its snapshot turns it on (`sync`).
        options.noMetaSync = !readOnly
        options.checkpoint = restore
        let environment: Environment
        do {
            environment = try withExtendedLifetime(restoringLock) { () throws(LMDBError) in
                try Environment.open(path: path, options: options)
            }
        } catch LMDBError.invalid {
            throw .corruptStore(path: path, detail: "data.mdb is not a valid LMDB file")
        } catch LMDBError.accessDenied {
            throw .notWritable(path: path, reason: "permission denied opening its files")
        } catch {
            throw .from(error, path: path, operation: "opening the LMDB environment", maxMapSize: options.maxMapSize)
        }
        do {
            // A creation cut off after LMDB wrote its empty meta pages: nothing to lose, redo it.
            if !isNew, try StoreCreation.isUncommitted(environment) {
                if readOnly { throw StoreCreation.unfinished(path: path) }
                isNew = true
            }
            var kept = checkpoint
            if !readOnly && !isNew {
                try Self.checkpoint(environment, path: path, maxMapSize: options.maxMapSize, kept: &kept,
                               keepsCheckpoints: configuration.maxReaders >= minimumReadersForCheckpoints)
            }
            let databases: [Database]
            var committed = false
            if readOnly {
                databases = try environment.read { txn in try openDatabases(txn, isNew: isNew, readOnly: readOnly, path: path) }
            } else {
                let before = try environment.lastCommittedTransaction()
                databases = try environment.write { txn in try openDatabases(txn, isNew: isNew, readOnly: readOnly, path: path) }
                committed = try environment.lastCommittedTransaction() != before
            }
            if isNew { try StoreCreation.makeDurable(environment, path: path, fileSystem: configuration.logFileSystem) }
            if committed && !isNew {
                // Opening the databases wrote (the format record of an upgrade to this version):
                // durable, and kept, before any unsynced commit.
                try Self.checkpoint(environment, path: path, maxMapSize: options.maxMapSize, kept: &kept,
                                    keepsCheckpoints: configuration.maxReaders >= minimumReadersForCheckpoints)
            }
            let tier = DurableTier(environment: environment, path: path, maxMapSize: options.maxMapSize,
                                   databases: databases, keyHasher: configuration.keyHasher,
                                   checkpoint: kept, keepsCheckpoints: !readOnly && configuration.maxReaders >= minimumReadersForCheckpoints)
            if !readOnly { try tier.checkStructure() }
            return (tier, writerLock)
        } catch {
            throw .from(error, path: path, operation: "reading the store's metadata", maxMapSize: options.maxMapSize)
        }
    }

    /// The last checkpoint of the store at `path` (`CheckpointFile`), and the meta pages an open
    /// is to go back to when the last writer stopped after commits it did not sync
    /// (`LMDB/MetaPages.swift`, rule 3): only under the writer lock. A writer holds it; an open
    /// that does not write (a read-only store, the reader table) takes it for the open when no
    /// writer holds it (`restoringLock`, to keep until LMDB is open), or waits until the writer
    /// that holds it has restored (`awaitRestoredOrProbe`).
    /// - Throws: `corruptStore` for a damaged file when writing (a writer would build on a state
    ///   it cannot trust; one that does not write reads LMDB as it stands, as beside a writer);
    ///   what `awaitRestoredOrProbe` throws.
    static func keptCheckpoint(path: String, readOnly: Bool) throws(ImageStoreError)
        -> (kept: CheckpointFile.Kept?, restoringLock: WriterLock?, restore: MetaPages?) {
        var checkpoint: CheckpointFile.Kept?
        do { checkpoint = try CheckpointFile.load(in: path) } catch {
            guard readOnly else { throw error }
            checkpoint = nil
        }
        let restoringLock = readOnly ? try awaitRestoredOrProbe(path, checkpoint: &checkpoint) : nil
        let mayRestore = (checkpoint?.writerOpen ?? false) && (!readOnly || restoringLock != nil)
        return (checkpoint, restoringLock, mayRestore ? checkpoint?.pages : nil)
    }

    /// For a read-only open of a store whose last writer did not close (`checkpoint` says so):
    /// the writer lock, taken to restore the checkpoint when no writer holds it; or nil once the
    /// writer that holds it has kept a checkpoint of its own (it has restored what a crash left,
    /// and LMDB is whole as it stands). Waits for that, at most `restoreWaitSeconds`: opening
    /// LMDB meanwhile could read a state a power cut tore, and would keep that writer from
    /// restoring it. `checkpoint` is reloaded while waiting.
    /// - Throws: `storage` when the writer does not get there in time; what loading throws.
    private static func awaitRestoredOrProbe(_ path: String, checkpoint: inout CheckpointFile.Kept?) throws(ImageStoreError) -> WriterLock? {
        let deadline = Date().addingTimeInterval(restoreWaitSeconds)
        while let kept = checkpoint, kept.writerOpen {
            if let lock = WriterLock.probe(directory: path) { return lock }
            // The writer that saved the file holds the lock, alive. Otherwise wait: a writer
            // that has not saved it yet; no pid yet (a writer between its lock and writing it);
            // or a dead writer's pid, left by a reader that holds the lock to restore (a probe
            // writes none).
            let holder = WriterLock.holderPid(directory: path)
            if let holder, holder == kept.writerPid, kill(holder, 0) == 0 || errno == EPERM { return nil }
            guard Date() < deadline else {
                throw .storage(path: path, detail: "its writer (pid \(holder.map(String.init) ?? "unknown")) has not yet recovered it after its last writer stopped; open it again in a moment")
            }
            usleep(10_000)
            do { checkpoint = try CheckpointFile.load(in: path) } catch {
                return nil  // damaged meanwhile: read LMDB as it stands, as the first load would
            }
        }
        return nil
    }

    /// How long a read-only open waits for a starting writer to recover the store.
    static let restoreWaitSeconds: TimeInterval = 10

    /// Opens (creating in a new store) the store's databases, checking the format record.
    static func openDatabases(_ txn: borrowing Transaction, isNew: Bool, readOnly: Bool, path: String) throws -> [Database] {
        let meta: Database
        do {
            meta = try txn.openDatabase(named: StoreFormat.metaDatabase, create: isNew)
        } catch LMDBError.notFound {
            throw StoreCreation.missingMetadata(txn, path: path, found: "no `meta` database",
                                                foreign: "an LMDB database without imgstore's metadata")
        }
        if isNew {
            try txn.put(meta, key: StoreFormat.formatKey, value: StoreFormat.formatRecord)
        } else {
            try checkFormat(txn.get(meta, key: StoreFormat.formatKey), txn, path: path)
            if !readOnly { try upgradeFormat(txn, meta: meta) }
        }
        do {
            let entries = try txn.openDatabase(named: StoreFormat.entriesDatabase, create: !readOnly)
            let blobs = try txn.openDatabase(named: StoreFormat.blobsDatabase, create: !readOnly)
            let expiry = try txn.openDatabase(named: StoreFormat.expiryDatabase, create: !readOnly)
            let access = try txn.openDatabase(named: StoreFormat.accessDatabase, create: !readOnly)
            let quarantine = try txn.openDatabase(named: StoreFormat.quarantineDatabase, create: !readOnly)
            return [meta, entries, blobs, expiry, access, quarantine]
        } catch LMDBError.notFound {
            throw ImageStoreError.corruptStore(path: path, detail: "one of its databases (entries, blobs, expiry, access, quarantine) is missing")
        }
    }

    /// Writes this build's format record over an older one (checked by `checkFormat`), so
    /// that older builds refuse the store from now on (`StoreFormat.swift`, version 2).
    private static func upgradeFormat(_ txn: borrowing Transaction, meta: Database) throws {
        let version = try txn.get(meta, key: StoreFormat.formatKey).flatMap {
            ByteReader(bytes: $0).integer(at: StoreFormat.magic.count, as: UInt32.self)
        }
        if let version, version < StoreFormat.version {
            try txn.put(meta, key: StoreFormat.formatKey, value: StoreFormat.formatRecord)
        }
    }

    private static func checkFormat(_ record: UnsafeRawBufferPointer?, _ txn: borrowing Transaction,
                                    path: String) throws(ImageStoreError) {
        guard let record, record.count == StoreFormat.magic.count + 4,
              Array(record.prefix(StoreFormat.magic.count)) == StoreFormat.magic
        else {
            throw StoreCreation.missingMetadata(txn, path: path, found: record == nil ? "no format record" : "a format record that is not imgstore's",
                                                foreign: "an LMDB database whose format record is not imgstore's")
        }
        let version = ByteReader(bytes: record).integer(at: StoreFormat.magic.count, as: UInt32.self)!
        guard version <= StoreFormat.version else {
            throw .newerFormat(path: path, found: version, supported: StoreFormat.version)
        }
    }

    // MARK: - Reads

    /// The record stored for `cacheKey`, without touching its bytes.
    func record(cacheKey: String) throws(ImageStoreError) -> EntryRecord? {
        try reading("reading an entry") { txn in try locate(cacheKey, in: txn)?.record }
    }

    /// Calls `body` with every entry's record in key order, `pageSize` records per read
    /// transaction. Each page is decoded and the transaction ended before `body` sees it, so
    /// `body` runs outside any transaction: it may read the store, take as long as it likes and
    /// never pins old pages (LMDB cannot reuse pages freed while a reader is open).
    ///
    /// Each page is one snapshot; the walk as a whole is not. An entry put or removed during the
    /// walk may or may not be visited; none is visited twice, and keys only go up.
    /// - Throws: `corruptStore` for a malformed record or a damaged tree; what `body` throws.
    func forEachRecord(pageSize: Int = 256, _ body: (EntryRecord) throws(ImageStoreError) -> Void) throws(ImageStoreError) {
        precondition(pageSize > 0, "pageSize must be positive")
        var after: [UInt8]?
        while true {
            let page: [(key: [UInt8], record: EntryRecord)] = try reading("listing entries") { txn in
                var page: [(key: [UInt8], record: EntryRecord)] = []
                try (after ?? []).withUnsafeBytes { start in
                    _ = try txn.scan(entries, from: after == nil ? nil : start) { key, value in
                        if let after, key.elementsEqual(after) { return true }  // resume past it
                        guard let record = EntryRecord(decoding: value) else {
                            throw ImageStoreError.corruptStore(path: path, detail: "an entry record is malformed (key \(Self.hex(key)))")
                        }
                        page.append((Array(key), record))
                        return page.count < pageSize
                    }
                }
                return page
            }
            for (_, record) in page { try body(record) }
            guard page.count == pageSize, let last = page.last else { return }
            after = last.key
        }
    }

    /// Calls `body` with the key hash (`StoreFormat.hashByteCount` bytes) of every entry, from
    /// one snapshot, and returns how many there were: what `KeyFilter` is built from.
    ///
    /// A key of another size is skipped: no read can find it (`locate` takes only keys of
    /// `entryKeyByteCount` bytes), so leaving it out hides nothing, and `verify` reports it.
    /// - Throws: `corruptStore` for a damaged tree.
    func forEachKeyHash(_ body: (UnsafeRawBufferPointer) -> Void) throws(ImageStoreError) -> Int {
        try reading("listing the entries' keys") { txn in
            var count = 0
            _ = try txn.scan(entries) { key, _ in
                if key.count == StoreFormat.entryKeyByteCount {
                    body(UnsafeRawBufferPointer(rebasing: key[..<StoreFormat.hashByteCount]))
                    count += 1
                }
                return true
            }
            return count
        }
    }

    /// LMDB's last committed write transaction, whichever process committed it.
    func lastCommittedTransaction() throws(ImageStoreError) -> UInt64 {
        do { return try environment.lastCommittedTransaction() } catch {
            throw .from(error, path: path, operation: "reading the last commit", maxMapSize: maxMapSize)
        }
    }

    /// Entry count and the logical-bytes counter, from one snapshot.
    func counts() throws(ImageStoreError) -> (entries: Int, logicalBytes: Int) {
        try reading("reading statistics") { txn in
            (try txn.statistics(entries).entries, try logicalBytes(in: txn))
        }
    }

    // MARK: - Writes (the log applier's)

    /// The last log sequence number applied to LMDB (0 for a new store).
    func appliedSequence() throws(ImageStoreError) -> UInt64 {
        try reading("reading the applied sequence number") { txn in
            guard let value = try txn.get(meta, key: StoreFormat.appliedSequenceKey) else { return 0 }
            return ByteReader(bytes: value).integer(at: 0, as: UInt64.self) ?? 0
        }
    }

    /// Commits a transaction that changes nothing (applied-seq rewritten as it stands), on the
    /// writer queue. LMDB reuses no page its newest commit freed (`mdb_page_alloc` takes only
    /// pages freed before the oldest snapshot still readable, and the newest is always one): a
    /// removal's pages become reusable only once a commit follows it. A checkpoint after this
    /// one (which pins this commit's snapshot) leaves them reusable.
    func advance() throws(ImageStoreError) {
        try writing("advancing past the last commit") { txn in
            let applied = try txn.get(meta, key: StoreFormat.appliedSequenceKey).map(Array.init) ?? Self.encode(UInt64(0))
            try txn.put(meta, key: StoreFormat.appliedSequenceKey, value: applied)
        }
    }

    /// Applies log records in one transaction that also records the last one's sequence
    /// number, so a crash leaves LMDB either before or after the whole batch.
    ///
    /// A batch the map cannot hold in one transaction is applied in halves, in turn: admission
    /// reserves each put's room alone, but the B-tree pages a transaction copies add up (a
    /// batch of removals may copy every page of a tree), and pages a commit frees are reusable
    /// only after the checkpoint that `writing` runs when the map is full. Each half records its
    /// own last sequence number, so a crash between them replays from there.
    func apply(_ batch: [SequencedEntry]) throws(ImageStoreError) {
        guard !batch.isEmpty else { return }
        let bytes = batch.reduce(0) { if case let .put(_, data) = $1.entry { $0 + data.count } else { $0 } }
        do {
            try writing("applying the log", bytes: bytes) { txn in try apply(batch, in: txn) }
        } catch .storeFull where batch.count > 1 {
            let middle = batch.count / 2
            try apply(Array(batch[..<middle]))
            try apply(Array(batch[middle...]))
        }
    }

    /// Applies `batch` inside `txn` and records its last sequence number as applied-seq. `txn`
    /// may belong to another environment whose databases were opened in this one's order (a
    /// salvage's fresh data file): LMDB numbers databases in the order they are opened.
    func apply(_ batch: [SequencedEntry], in txn: borrowing Transaction) throws {
        guard let last = batch.last?.sequence else { return }
        for item in batch {
            switch item.entry {
            case let .put(record, data): try put(record, data: data, in: txn)
            case let .renew(record, _): try renew(record, in: txn)
            case let .delete(cacheKey): try remove(cacheKey: cacheKey, in: txn)
            case .deleteAll: try removeAll(in: txn)
            }
        }
        try txn.put(meta, key: StoreFormat.appliedSequenceKey, value: Self.encode(last))
    }

    /// Makes every committed transaction durable, meta page included (`mdb_env_sync(env, 1)`):
    /// a checkpoint of LMDB. Then, for a writer that keeps checkpoints (`LMDB/MetaPages.swift`),
    /// keeps the meta pages in `CheckpointFile` (when they changed), pins the snapshot and lets
    /// commits skip their sync until the next one. On the writer queue (or before it runs
    /// anything, at the open), so no commit comes between the sync and the pin.
    /// - Throws: `storage` (and what a failed sync maps to). After a throw commits go on
    ///   unsynced only if an earlier checkpoint allowed it, still protected by its pin and file.
    func sync() throws(ImageStoreError) {
        var kept = checkpoint.withLock { $0 }
        defer { checkpoint.withLock { $0 = kept } }
        try Self.checkpoint(environment, path: path, maxMapSize: maxMapSize, kept: &kept, keepsCheckpoints: keepsCheckpoints)
    }

    /// The writer's last checkpoint, when it closes (or is released): LMDB synced, commits
    /// synced from now on, and `CheckpointFile` saying so, so that the next open keeps LMDB as
    /// it stands, changes made to it meanwhile included. On the writer queue.
    func syncClosing() throws(ImageStoreError) {
        try sync()
        guard keepsCheckpoints else { return }
        var kept = checkpoint.withLock { $0 }
        defer { checkpoint.withLock { $0 = kept } }
        do {
            try environment.setUnsyncedCommits(false)
            guard var closed = kept, closed.writerOpen else { return }
            closed.writerOpen = false
            try CheckpointFile.save(closed, in: path)
            kept = closed
        } catch let error as ImageStoreError {
            throw error
        } catch {
            throw .from(error, path: path, operation: "checkpointing LMDB", maxMapSize: maxMapSize)
        }
    }

    /// `sync`'s work, also run by a writable open before its first commit (a pin of the last
    /// writer's checkpoint ended with its process). `kept` is what `CheckpointFile` holds.
    ///
    /// Invariant: while the file says a writer is open, the snapshot it names is pinned by the
    /// writer, or no commit has come after it. So a writer that cannot pin (no reader slot, or
    /// it does not keep checkpoints) syncs and removes the file before it commits again, and the
    /// file is saved before the pin moves (a failed save leaves the old pin on the old file).
    static func checkpoint(_ environment: Environment, path: String, maxMapSize: Int, kept: inout CheckpointFile.Kept?,
                           keepsCheckpoints: Bool) throws(ImageStoreError) {
        if let failure = environment.syncFailure.withLock({ $0 }) as? ImageStoreError { throw failure }
        do { try environment.sync(force: true) } catch {
            // Sticky: a later sync may succeed after the kernel dropped the pages this one could
            // not write, and a checkpoint on it would name them (`syncFailure`).
            let failure = ImageStoreError.from(error, path: path, operation: "syncing LMDB", maxMapSize: maxMapSize)
            environment.syncFailure.withLock { $0 = $0 ?? failure }
            throw failure
        }
        do {
            guard keepsCheckpoints else {
                if kept != nil { try forgetCheckpoint(environment, path: path, kept: &kept) }
                return
            }
            let now = CheckpointFile.Kept(pages: try environment.metaPages(), writerOpen: true)
            if kept != now {
                do { try CheckpointFile.save(now, in: path) } catch {
                    // No room or no right to write it (a full disk): commits sync, as without
                    // checkpoints; the old file (and its pin) stay until that is safe.
                    try forgetCheckpoint(environment, path: path, kept: &kept)
                    return
                }
                kept = now
            }
            do {
                try environment.pinNewestSnapshot(expecting: now.pages.newestTransaction)
            } catch {
                // No pin (no reader slot; or an error): commits sync and the file goes, so no
                // commit ever runs unpinned while it names this data file.
                try forgetCheckpoint(environment, path: path, kept: &kept)
                if error == .readersFull { return }
                throw error
            }
            try environment.setUnsyncedCommits(true)
        } catch let error as ImageStoreError {
            throw error
        } catch {
            throw .from(error, path: path, operation: "checkpointing LMDB", maxMapSize: maxMapSize)
        }
    }

    /// Commits sync again, and the checkpoint file goes (durably): LMDB was just synced, so
    /// its newest state is whole on disk and nothing need be restored after a crash.
    private static func forgetCheckpoint(_ environment: Environment, path: String, kept: inout CheckpointFile.Kept?) throws {
        try environment.setUnsyncedCommits(false)
        let file = CheckpointFile.path(in: path)
        guard unlink(file) == 0 || errno == ENOENT else {
            throw ImageStoreError.storage(path: path, detail: "removing \(CheckpointFile.fileName): \(String(cString: strerror(errno)))")
        }
        kept = nil  // gone: a later checkpoint saves it again, even if the directory's sync fails
        try FileSystem.sync(path)
        environment.unpin()  // nothing names its snapshot now; its reader slot and pages go back
    }

    /// The room the map can still take (`MapRoom`): its unused end (what it may grow to, minus
    /// pages in use), and that plus pages on LMDB's free list that it can reuse now. Pages freed
    /// by a transaction at least as new as the oldest reader's snapshot (this read's own
    /// included) do not count: a reader in any process pins them, and counting them would
    /// acknowledge puts that cannot be applied.
    ///
    /// The map's last page does not count: LMDB never hands it out (`mdb_page_alloc` refuses a
    /// run that would reach it, `pgno + num >= me_maxpg`).
    func mapRoom() throws(ImageStoreError) -> MapRoom {
        let pages = try pageSpace()
        let tail = max(0, maxMapSize - pages.used - pages.pageSize)
        return MapRoom(total: tail + pages.reusable, tail: tail)
    }

    /// Bytes of pages on LMDB's free list that a write can reuse now (as `mapRoom`
    /// counts them): what the data file takes without growing, so without new disk space.
    func reusableBytes() throws(ImageStoreError) -> Int { try pageSpace().reusable }

    private func pageSpace() throws(ImageStoreError) -> (used: Int, reusable: Int, pageSize: Int) {
        do {
            let stats = try environment.statistics()
            // A damaged free list cannot be read; no write is taken then (`writeRefusal`).
            if writeRefusal.withLock({ $0 != nil }) { return (stats.usedBytes, 0, stats.pageSize) }
            let free = try environment.read { txn in
                try txn.freePageCount(freedBefore: environment.oldestReaderTransaction())
            }
            return (stats.usedBytes, free * stats.pageSize, stats.pageSize)
        } catch {
            throw .from(error, path: path, operation: "reading free space", maxMapSize: maxMapSize)
        }
    }

    /// The store's databases in the order they are opened (and so numbered by LMDB).
    var databases: [Database] { [meta, entries, blobs, expiry, access, quarantine] }

    /// Waits until every write queued before this call has finished.
    func drainWrites() { writer.sync {} }

    // MARK: - Helpers

    /// Finds the slot holding `cacheKey` by visiting every slot of its hash: a collision never
    /// returns another key's entry.
    func locate(_ cacheKey: String, in txn: borrowing Transaction) throws -> (key: [UInt8], record: EntryRecord)? {
        var found: (key: [UInt8], record: EntryRecord)?
        _ = try locate(cacheKey, in: txn) { key, record in found = (Array(key), record) }
        return found
    }

    /// Calls `body` with the slot key holding `cacheKey` and its record, found as
    /// `locate(_:in:)` finds them; false (and `body` is not called) when there is none.
    ///
    /// The key points into the map and is valid only while `body` runs. A closure rather than
    /// a returned optional: a miss then moves no optional record (the profile of `get.miss`
    /// showed those copies, through outlined value witnesses, as memmove).
    /// `hash` is `cacheKey`'s when the caller has it already; nil computes it.
    func locate(_ cacheKey: String, hash: KeyHash? = nil, in txn: borrowing Transaction,
                then body: (_ key: UnsafeRawBufferPointer, _ record: EntryRecord) throws -> Void) throws -> Bool {
        var found = false
        // The first collision slot's key, the hash and two zero bytes, on the stack: a miss allocates nothing.
        try withKeyHash(hash ?? keyHash(cacheKey)) { start in
            let hash = UnsafeRawBufferPointer(rebasing: start[..<StoreFormat.hashByteCount])
            try txn.scan(entries, from: start) { key, value in
                guard key.count == StoreFormat.entryKeyByteCount, key.starts(with: hash) else { return false }
                guard let record = EntryRecord(decoding: value) else {
                    throw ImageStoreError.corruptStore(path: path, detail: "an entry record is malformed (key \(Self.hex(key)))")
                }
                guard record.cacheKey == cacheKey else { return true }
                found = true
                try body(key, record)
                return false
            }
        }
        return found
    }

    /// `cacheKey`'s hash: the prefix of its entry keys.
    @inline(__always)
    func keyHash(_ cacheKey: String) -> KeyHash {
        KeyHash(cacheKey, customHasher: customKeyHasher)
    }

    /// Calls `body` with the first collision slot key of the keys hashed to `hash` (the hash,
    /// then slot 0), in a stack buffer.
    @inline(__always)
    func withKeyHash<R>(_ hash: KeyHash, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withUnsafeTemporaryAllocation(byteCount: StoreFormat.entryKeyByteCount, alignment: 8) { start in
            hash.store(into: start)
            start[StoreFormat.hashByteCount] = 0
            start[StoreFormat.hashByteCount + 1] = 0
            return try body(UnsafeRawBufferPointer(start))
        }
    }

    /// The next unused collision slot for `cacheKey`'s hash.
    func freeSlot(for cacheKey: String, in txn: borrowing Transaction) throws -> [UInt8] {
        let hash = keyHasher(cacheKey)
        var next = 0
        try (hash + [0, 0]).withUnsafeBytes { start in
            _ = try txn.scan(entries, from: start) { key, _ in
                guard key.count == StoreFormat.entryKeyByteCount, key.starts(with: hash) else { return false }
                next = Int(key[16]) << 8 | Int(key[17]) + 1
                return true
            }
        }
        guard next <= Int(UInt16.max) else {
            throw ImageStoreError.storage(path: path, detail: "more than 65536 keys share one hash")
        }
        return hash + [UInt8(next >> 8), UInt8(next & 0xFF)]
    }

    func logicalBytes(in txn: borrowing Transaction) throws -> Int {
        guard let value = try txn.get(meta, key: StoreFormat.logicalBytesKey) else { return 0 }
        return Int(ByteReader(bytes: value).integer(at: 0, as: UInt64.self) ?? 0)
    }

    func addLogicalBytes(_ delta: Int, in txn: borrowing Transaction) throws {
        let total = try logicalBytes(in: txn) + delta
        // Invariant: the counter equals the sum of all blobs' sizes, so it never goes negative.
        assert(total >= 0, "logical-bytes counter went negative")
        try txn.put(meta, key: StoreFormat.logicalBytesKey, value: Self.encode(UInt64(max(0, total))))
    }

    static func encode(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
    static func hex(_ bytes: some Sequence<UInt8>) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    func reading<R>(_ operation: String, _ body: (borrowing Transaction) throws -> R) throws(ImageStoreError) -> R {
        do { return try environment.read(body) } catch {
            throw .from(error, path: path, operation: operation, maxMapSize: maxMapSize)
        }
    }

    /// Runs `body` in a write transaction; must be called on the writer queue.
    ///
    /// `bytes` is what `body` writes (the images' bytes): under `writeMap` the environment
    /// allocates the file's blocks for it first (`Environment.write(reserving:)`), so a full
    /// disk is an error here and never a SIGBUS in the middle of the commit.
    ///
    /// LMDB reports a write cut short by a full disk as `EIO`, not `ENOSPC` (a short `pwrite`
    /// in `mdb_page_flush`), so an I/O error while the file system has less room left than
    /// the write needed (`bytes` plus slack for pages and metadata) is reported as a full disk.
    func writing<R>(_ operation: String, bytes: Int = 0, _ body: (borrowing Transaction) throws -> R) throws(ImageStoreError) -> R {
        // Invariant: LMDB is written only from the writer queue, so its writer lock is taken
        // and released on one thread at a time and writers never queue on it.
        dispatchPrecondition(condition: .onQueue(writer))
        // Invariant: nothing writes to a data file found damaged (`writeRefusal`): a commit
        // could read its damaged pages, and a sweep, an eviction or the access times would go
        // into it around the log records it lacks. Only the salvage writes, to a fresh file.
        try checkAcceptingWrites()
        do {
            do {
                return try environment.write(reserving: bytes, body)
            } catch LMDBError.mapFull where keepsCheckpoints {
                // Pages freed since the last checkpoint are pinned until the next
                // (`LMDB/MetaPages.swift`): one now lets LMDB reuse them, then the same once more.
                try sync()
                return try environment.write(reserving: bytes, body)
            }
        } catch let error as ImageStoreError {
            throw error
        } catch LMDBError.ioError where FileSystem.availableBytes(at: path).map({ $0 < bytes + (1 << 20) }) ?? false {
            throw .diskFull(path: path)
        } catch {
            throw .from(error, path: path, operation: operation, maxMapSize: maxMapSize)
        }
    }
}
