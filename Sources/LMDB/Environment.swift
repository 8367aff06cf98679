import CLMDB
import CLMDBGuard
import Foundation
import Locking
import Synchronization
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// An open LMDB environment: a directory holding `data.mdb` and `lock.mdb`.
///
/// Thread safety: `read` may be called from any thread at once (`MDB_NOTLS`). `write` must be
/// called from one thread at a time and each call runs its transaction start to end on the
/// calling thread, as LMDB's writer mutex requires; the store funnels all writes through one
/// serial queue.
///
/// One environment per directory per process: `open` returns the instance already open for
/// the same directory (matched by device and inode, not by spelling) while it is alive,
/// because opening the same file twice in one process breaks LMDB's locks.
package final class Environment: Sendable {
    /// `MDB_env*`, nil once lost (a reopen in `replaceDataFile` failed). LMDB allows concurrent
    /// use of the handle from many threads with `MDB_NOTLS`.
    /// Invariant: read only while holding `gate` (shared or exclusive), and replaced only while
    /// holding it exclusively (`replaceDataFile`), so no call can see a closed handle.
    nonisolated(unsafe) private var storedHandle: OpaquePointer? {
        didSet { mapStart = storedHandle.flatMap(Self.mapStart(of:)) }
    }
    /// `lock.mdb`, held open to probe LMDB's lock on it (`LockFile`); nil when read-only.
    private let lockFile: LockFile?
    /// Where LMDB mapped `data.mdb` in this process (nil when it cannot be found): the map
    /// never moves while the handle is open, because its size never changes (see `write`).
    /// Guarded like `storedHandle`.
    nonisolated(unsafe) private var mapStart: UInt?
    /// The directory this environment was opened at.
    package let path: String
    package let options: EnvironmentOptions
    let gate = ResizeGate()
    /// Read transactions kept between reads (`read`); drained before the handle closes.
    private let readers: ReadTransactionPool
    /// The map size this process last set; guarded so a resize and a stats read agree.
    private let currentMapSize: LockedValue<Int>
    private let identity: FileIdentity
    /// LMDB's page size for this file (the OS page size when it was created).
    let pageSize: Int
    /// The read transaction that holds the checkpointed snapshot (`MetaPages.swift`), or nil.
    let pin = LockedValue<PinnedSnapshot?>(nil)
    /// The first failed checkpoint sync of this environment, kept by its writer: once a sync
    /// failed, no later one is trusted (the kernel may have dropped the pages it could not write).
    package let syncFailure = LockedValue<(any Error)?>(nil)

    private init(handle: OpaquePointer, lockFile: LockFile?, path: String, options: EnvironmentOptions, identity: FileIdentity) {
        self.storedHandle = handle
        self.lockFile = lockFile
        self.path = path
        self.options = options
        self.identity = identity
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        self.currentMapSize = LockedValue(Int(info.me_mapsize))
        var stat = MDB_stat()
        mdb_env_stat(handle, &stat)
        pageSize = Int(stat.ms_psize)
        mapStart = Self.mapStart(of: handle)
        readers = ReadTransactionPool(capacity: Self.keptReaders(maxReaders: options.maxReaders))
    }

    /// How many read transactions to keep: enough for the threads of a busy service to each
    /// renew one of their own, and never more than a sixteenth of the reader table, which all
    /// processes share (a small table keeps none).
    static func keptReaders(maxReaders: UInt32) -> Int { min(8, Int(maxReaders) / 16) }

    deinit {
        if let hook = Environment.closingHookForTesting.withLock({ $0 }) { hook(path) }
        // Closed under the registry lock, and the entry removed only then: an `open` of the
        // same directory that finds the entry with no environment (this one, being released)
        // waits for that (see `open`), so it never makes a second environment while this one
        // still holds LMDB's locks and reader slots.
        Environment.registry.withLock { open in
            readers.drain()  // LMDB closes an environment only with every transaction ended
            unpin()
            if let storedHandle { mdb_env_close(storedHandle) }
            lockFile?.close()  // after mdb_env_close: closing it earlier would drop LMDB's lock
            if open[identity]?.environment == nil { open[identity] = nil }
        }
    }

    /// Called with the directory at the start of every environment's `deinit`, before it
    /// closes: a test holds a release there to open the same directory meanwhile.
    package static let closingHookForTesting = LockedValue<(@Sendable (String) -> Void)?>(nil)

    /// The open `MDB_env*`.
    /// - Throws: `LMDBError.lost` once a reopen failed, instead of using a freed environment.
    var handle: OpaquePointer {
        get throws(LMDBError) {
            guard let storedHandle else { throw LMDBError.lost }
            return storedHandle
        }
    }

    /// Opens (or returns the already open) environment at the directory `path`.
    ///
    /// Clears reader slots left by dead processes (`mdb_reader_check`).
    /// - Throws: `LMDBError`: `ENOENT`/`ENOTDIR` for a bad path, `EACCES`, `.invalid` when
    ///   `data.mdb` is not an LMDB file, `.versionMismatch`, `.corrupted`.
    ///
    /// Invariant: this process has at most one environment open per directory. LMDB requires
    /// it: closing an environment frees every reader slot of the process in `lock.mdb` and
    /// drops the process's `fcntl` locks on the file, so a second environment would lose its
    /// own (seen as `MDB_BAD_RSLOT`). An entry whose environment reads nil is one being
    /// released, whose `deinit` is about to close it and remove the entry: the open waits.
    package static func open(path: String, options: EnvironmentOptions = .init()) throws(LMDBError) -> Environment {
        guard let identity = FileIdentity(path: path) else { throw LMDBError(code: errno) }
        Transaction.installFaultGuard()
        while true {
            let opened = try registry.withLock { (open: inout [FileIdentity: WeakEnvironment]) throws(LMDBError) -> Environment? in
                if let entry = open[identity] {
                    guard let existing = entry.environment else { return nil }  // closing: wait for it
                    if existing.holdsDataFile(at: path) { return existing }
                }
                // No environment of this process has the file open: restoring the meta pages
                // cannot pull them from under one.
                if let checkpoint = options.checkpoint { try restore(checkpoint, directory: path, options: options) }
                let environment = try makeEnvironment(path: path, options: options, identity: identity)
                open[identity] = WeakEnvironment(environment: environment)
                return environment
            }
            if let opened { return opened }
            usleep(1_000)  // a deinit in progress: it needs the registry's lock, then removes the entry
        }
    }

    private static func makeEnvironment(
        path: String, options: EnvironmentOptions, identity: FileIdentity
    ) throws(LMDBError) -> Environment {
        let handle = try makeHandle(path: path, options: options, mapSize: options.maxMapSize)
        var lockFile: LockFile?
        if !options.readOnly {
            do { lockFile = try LockFile(directory: path) } catch {
                mdb_env_close(handle)
                throw error
            }
        }
        return Environment(handle: handle, lockFile: lockFile, path: path, options: options, identity: identity)
    }

    /// Creates and opens an `MDB_env*` on the data file now at `path/data.mdb`, checks that the
    /// data file holds every page LMDB will read, and clears stale reader slots.
    ///
    /// An `MDB_RDONLY` open opens `data.mdb` *before* it waits for its lock on `lock.mdb`
    /// (mdb.c, `mdb_env_open`), so it can end up holding the file a compaction of another
    /// process has just renamed away, and would read that frozen file for ever. Once open, it
    /// holds its shared lock, and no compaction can replace the file until it closes
    /// (`LockFile`), so comparing the open file with the named one once is enough; on a
    /// mismatch it opens again.
    private static func makeHandle(path: String, options: EnvironmentOptions, mapSize: Int) throws(LMDBError) -> OpaquePointer {
        for _ in 0..<100 {
            let env = try openHandle(path: path, options: options, mapSize: mapSize)
            do {
                if try isCurrentDataFile(env, path: path) { return env }
            } catch {
                mdb_env_close(env)
                throw error
            }
            mdb_env_close(env)
        }
        throw LMDBError.busy
    }

    /// Whether this environment's data file is the one now at `path/data.mdb`. A directory
    /// deleted while its environment lives on (a store not yet released) leaves its identity,
    /// device and inode, to the next directory made there (ext4 reuses a freed inode at once),
    /// which must get an environment of its own, not that one's deleted file.
    private func holdsDataFile(at path: String) -> Bool {
        gate.shared {
            guard let storedHandle else { return false }
            do { return try Self.isCurrentDataFile(storedHandle, path: path) } catch { return false }  // then a new one reports it
        }
    }

    /// Whether the data file `env` has open is the one at `path/data.mdb` (same device and inode).
    private static func isCurrentDataFile(_ env: OpaquePointer, path: String) throws(LMDBError) -> Bool {
        var fd: mdb_filehandle_t = -1
        try check(mdb_env_get_fd(env, &fd))
        var opened = stat()
        guard fstat(fd, &opened) == 0 else { throw LMDBError(code: errno) }
        guard let named = FileIdentity(path: path + "/data.mdb") else { return false }
        return named == FileIdentity(device: UInt64(opened.st_dev), inode: UInt64(opened.st_ino))
    }

    private static func openHandle(path: String, options: EnvironmentOptions, mapSize: Int) throws(LMDBError) -> OpaquePointer {
        var env: OpaquePointer?
        try check(mdb_env_create(&env))
        guard let env else { throw LMDBError(code: ENOMEM) }
        // A writer with MDB_WRITEMAP extends the file to the map size while opening, which would
        // hide a cut: measure it first. (Its writer lock keeps other writers from growing it.)
        let lengthBeforeOpen = options.writeMap && !options.readOnly ? dataFileLength(path) : nil
        do throws(LMDBError) {
            try Transaction.installAssertHandler(env)
            try check(mdb_env_set_maxreaders(env, options.maxReaders))
            try check(mdb_env_set_maxdbs(env, options.maxDatabases))
            try check(mdb_env_set_mapsize(env, mapSize))
            try check(mdb_env_open(env, path, options.flags, mdb_mode_t(options.fileMode)))
            // LMDB opens the data file without close-on-exec: every process this one spawns
            // would hold it open (and keep a replaced file, or a mount, busy).
            var fd: mdb_filehandle_t = -1
            try check(mdb_env_get_fd(env, &fd))
            guard fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC) == 0 else { throw LMDBError(code: errno) }
            try checkDataFileLength(env, length: { lengthBeforeOpen ?? dataFileLength(path) })
            var dead: Int32 = 0
            if options.clearsStaleReaders { try check(mdb_reader_check(env, &dead)) }
        } catch {
            mdb_env_close(env)
            throw error
        }
        return env
    }

    /// The pid of another process that has this environment open, idle or not, read-only or
    /// not, or nil when this process is its only user (`LockFile`). Stale reader slots of dead
    /// processes do not count: a dead process holds no lock.
    package func otherProcess() throws(LMDBError) -> pid_t? {
        guard let lockFile else { preconditionFailure("probing the lock of a read-only environment") }
        return try lockFile.otherHolder()
    }

    /// Throws `MDB_CORRUPTED` when `data.mdb` is shorter than the pages a tree can reach. LMDB
    /// maps the file and trusts the meta page, so without this check the first read of a page
    /// past the end of a truncated file is a SIGBUS instead of an error.
    ///
    /// A file shorter than the pages in use (`me_last_pgno + 1`) is not damage by itself: LMDB
    /// never writes a page that its transaction allocated and freed again before committing (a
    /// loose page, skipped by `mdb_page_flush` and put on the free list), and a power cut can
    /// drop the writes of pages that were freed later. Such pages are read by nobody until a
    /// write reuses them, and that write `pwrite`s them. So the file is short only when a page
    /// past its end is not on the free list.
    ///
    /// `length` is measured after the meta page is read, so it covers every page a writer in
    /// another process wrote before committing that meta page; the free list is read in a
    /// snapshot of that same transaction (checked by its id; a commit in between starts over).
    private static func checkDataFileLength(_ env: OpaquePointer, length: () -> Int?) throws(LMDBError) {
        var stat = MDB_stat()
        try check(mdb_env_stat(env, &stat))
        let pageSize = Int(stat.ms_psize)
        while true {
            var info = MDB_envinfo()
            try check(mdb_env_info(env, &info))
            let lastPage = Int(info.me_last_pgno)
            let needed = (lastPage + 1) * pageSize
            guard let length = length() else { throw LMDBError(code: errno == 0 ? ENOENT : errno) }
            guard length < needed else { return }
            // Pages 0 and 1 are the meta pages, never free: a file without them is always short.
            let firstMissing = length / pageSize
            let missing = firstMissing...lastPage
            let cut = "data.mdb is \(length) bytes, shorter than the \(needed) bytes of the \(lastPage + 1) pages in use"
            let free: Int?
            do throws(LMDBError) {
                free = firstMissing >= 2 ? try freePages(env, in: missing, transaction: info.me_last_txnid) : 0
            } catch {
                // The free list itself lies (partly) past the end.
                throw LMDBError(code: MDB_CORRUPTED, detail: "\(cut), and its free list cannot be read (\(error)): the file was cut short")
            }
            guard let free else { continue }  // another process committed meanwhile: measure again
            if free < missing.count {
                throw LMDBError(code: MDB_CORRUPTED, detail: "\(cut), and \(missing.count - free) of the \(missing.count) pages past its end are not free (the file was cut short)")
            }
            return
        }
    }

    /// How many of the pages numbered `range` are on the free list (`FREE_DBI`: each record is
    /// keyed by a transaction id and holds a count followed by that many page numbers), read in
    /// a read transaction of its own through the fault-guarded cursor; nil when that
    /// transaction's snapshot is not `transaction`'s.
    private static func freePages(_ env: OpaquePointer, in range: ClosedRange<Int>, transaction: Int) throws(LMDBError) -> Int? {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &txn))
        defer { mdb_txn_abort(txn) }
        guard mdb_txn_id(txn) == transaction else { return nil }
        var cursor: OpaquePointer?
        try check(mdb_cursor_open(txn, 0, &cursor))
        defer { mdb_cursor_close(cursor) }
        var found = Set<Int>()
        var key = MDB_val()
        var value = MDB_val()
        var op = MDB_FIRST
        while true {
            let rc = imgstore_mdb_cursor_get(cursor, &key, &value, op)
            if rc == MDB_NOTFOUND { return found.count }
            try check(rc)
            op = MDB_NEXT
            guard let base = value.mv_data else { continue }
            let words = value.mv_size / MemoryLayout<Int>.size
            let ids = UnsafeRawBufferPointer(start: base, count: words * MemoryLayout<Int>.size)
            guard words > 0 else { continue }
            let count = min(ids.loadUnaligned(as: Int.self), words - 1)
            for index in 0..<max(count, 0) {
                let page = ids.loadUnaligned(fromByteOffset: (index + 1) * MemoryLayout<Int>.size, as: Int.self)
                if range.contains(page) { found.insert(page) }
            }
        }
    }

    /// The length of `path`/data.mdb in bytes, or nil when it cannot be stat'ed.
    private static func dataFileLength(_ path: String) -> Int? {
        var status = stat()
        return stat(path + "/data.mdb", &status) == 0 ? Int(status.st_size) : nil
    }

    /// Swaps in a new data file (a compacted copy) while no transaction of this process is
    /// open and no other process has the environment open: closes the environment, takes
    /// LMDB's lock on `lock.mdb` exclusively, lets `install` rename the new file over
    /// `data.mdb` (and make that durable), reopens (which resets the lock region for the new
    /// file) and lets `reopenDatabases` open the named databases again in a write transaction,
    /// in the order they were first opened, so their handles stay the same.
    ///
    /// Readers of this process wait at the gate meanwhile; other processes that open the
    /// environment meanwhile wait in `mdb_env_open` and then see the new file.
    ///
    /// What a throw leaves: `LMDBError.busy` when another process has the environment open
    /// (checked before closing and again, race-free, after): nothing was installed. When
    /// `install` throws, whatever it left at `data.mdb` is reopened and its error rethrown.
    /// When even the reopen fails, the environment is lost: every later call throws
    /// `LMDBError.lost` (the file on disk is whole; open the environment again).
    package func replaceDataFile<R>(install: () throws -> Void, reopenDatabases: (borrowing Transaction) throws -> R) throws -> R {
        guard let lockFile else { preconditionFailure("replacing the data file of a read-only environment") }
        return try gate.exclusive { () throws -> R in
            guard try lockFile.otherHolder() == nil else { throw LMDBError.busy }
            let mapSize = currentMapSize.withLock { $0 }
            readers.drain()  // no read runs (the gate is exclusive), so every kept one is in the pool
            // The new file is a synced copy: the caller checkpoints it (`checkpoint`) to
            // allow unsynced commits again; until then they sync, as the new handle's flags say.
            unpin()
            mdb_env_close(try handle)
            storedHandle = nil
            var failure: (any Error)?
            do {
                // Another process may have opened it since the check: then it keeps the old file.
                guard try lockFile.lockExclusively() else { throw LMDBError.busy }
                try install()
            } catch {
                failure = error
            }
            storedHandle = try Self.makeHandle(path: path, options: options, mapSize: mapSize)
            let transaction = try beginTransaction(flags: 0)
            let result = try reopenDatabases(transaction)
            try transaction.commit()
            if let failure { throw failure }
            return result
        }
    }

    // MARK: - Transactions

    /// Runs `body` in a read-only transaction (a consistent snapshot) and ends it on return
    /// (aborted on throw).
    ///
    /// Never waits for a writer. Bytes handed out by the transaction are valid only inside
    /// `body`: copy them out before returning. Must not be nested inside another transaction
    /// on the same thread.
    ///
    /// The transaction is a kept one renewed when one is free (`ReadTransactionPool`): it
    /// sees the newest commit all the same, and between reads it holds no snapshot.
    /// - Throws: what `body` throws; `LMDBError.mapResized` when another process, opened with
    ///   a larger `maxMapSize`, has filled the file past this process's map (reopen to adopt it).
    package func read<R>(_ body: (borrowing Transaction) throws -> R) throws -> R {
        try gate.shared { () throws -> R in
            let transaction = try beginRead()
            let result = try body(transaction)
            // A kept transaction is reset; one that opened a database is committed, not
            // aborted, which keeps that database's handle usable afterwards (lmdb.h, mdb_dbi_open).
            if let reader = try transaction.endRead(), !readers.give(reader) { reader.end() }
            return result
        }
    }

    /// A read transaction on the newest snapshot: a kept one renewed, or a new one.
    private func beginRead() throws(LMDBError) -> Transaction {
        if let reader = readers.take() {
            let rc = mdb_txn_renew(reader.handle)
            guard rc == 0 else {
                reader.end()
                try check(rc)
                preconditionFailure("unreachable")
            }
            return transaction(reader.handle, readOnly: true, reader: reader)
        }
        let new = try beginTransaction(flags: UInt32(MDB_RDONLY))
        guard readers.capacity > 0 else { return new }
        // Kept after this read (if a slot is free then): a new reader slot only now and then.
        return new.kept()
    }

    /// Runs `body` in a write transaction, committing on return and aborting on throw. The
    /// whole call runs on the calling thread.
    ///
    /// The map is sized once, at `options.maxMapSize`, when the environment opens, and never
    /// resized: `mdb_env_set_mapsize` needs every transaction of the process ended, so growing
    /// it while readers run would make readers wait for writers (or deadlock a read nested in
    /// another). Address space is cheap on 64-bit Linux, and without `MDB_WRITEMAP` the file
    /// grows only as pages are written. With `MDB_WRITEMAP` (LMDB then extends the file to the
    /// map, sparse), `reserving` bytes past the pages in use are allocated with
    /// `posix_fallocate` first, so LMDB never writes into a hole: a full disk is `ENOSPC`
    /// here instead of a SIGBUS in the middle of a commit.
    /// - Throws: what `body` throws; `LMDBError.mapFull` when the data reaches `maxMapSize`
    ///   (the environment stays usable); `ENOSPC` and other I/O errors from the commit.
    package func write<R>(reserving bytes: Int = 0, _ body: (borrowing Transaction) throws -> R) throws -> R {
        precondition(!options.readOnly, "write transaction on a read-only environment")
        return try gate.shared { () throws -> R in
            if options.writeMap { try allocateAhead(bytes) }
            let transaction = try beginTransaction(flags: 0)
            let result = try body(transaction)
            try transaction.commit()
            return result
        }
    }

    /// Under `MDB_WRITEMAP`, makes sure the file's blocks are allocated for `bytes` (plus slack
    /// for B-tree pages) past the pages in use. Only the writer calls it, on its one thread.
    private func allocateAhead(_ bytes: Int) throws(LMDBError) {
        var info = MDB_envinfo()
        mdb_env_info(try handle, &info)
        let needed = (Int(info.me_last_pgno) + 1) * pageSize + 2 * bytes + Self.allocationSlack
        guard needed > allocated.withLock({ $0 }) else { return }
        var fd: Int32 = -1
        try check(mdb_env_get_fd(handle, &fd))
        let target = needed + Self.allocationSlack  // allocate in steps, not per transaction
        let rc = posix_fallocate(fd, 0, off_t(min(target, options.maxMapSize)))
        if rc != 0 { throw LMDBError(code: rc) }
        allocated.withLock { $0 = target }
    }

    private static let allocationSlack = 64 << 20
    /// Bytes of the data file known to be allocated (`MDB_WRITEMAP` only).
    private let allocated = LockedValue(0)

    /// Begins a transaction and notes where the pages it may read lie in memory.
    /// - Throws: `LMDBError.mapResized` (see `read`), `readersFull`, I/O errors.
    private func beginTransaction(flags: UInt32) throws(LMDBError) -> Transaction {
        var txn: OpaquePointer?
        try check(mdb_txn_begin(handle, nil, flags, &txn))
        return transaction(txn!, readOnly: flags & UInt32(MDB_RDONLY) != 0, reader: nil)
    }

    /// The begun (or renewed) transaction `txn`, with the bounds of the pages it may read.
    private func transaction(_ txn: OpaquePointer, readOnly: Bool, reader: KeptReader?) -> Transaction {
        // After the begin, so the transaction's pages all lie below me_last_pgno. mdb_env_info
        // only copies fields of an open environment: it cannot fail here.
        var info = MDB_envinfo()
        if let storedHandle { mdb_env_info(storedHandle, &info) }
        guard let start = mapStart else {
            return Transaction(handle: txn, bounds: MapBounds(start: 0, used: .max, mapped: .max, readOnly: false, writeMap: true),
                               reader: reader)
        }
        return Transaction(handle: txn, bounds: MapBounds(
            start: start, used: start + UInt(Int(info.me_last_pgno) + 1) * UInt(pageSize),
            mapped: start + UInt(info.me_mapsize), readOnly: readOnly, writeMap: options.writeMap), reader: reader)
    }

    /// The address at which `env` mapped its data file, found in `/proc/self/maps` by the
    /// file's inode (LMDB does not say: `me_mapaddr` is only set for `MDB_FIXEDMAP`).
    /// This process's memory map listing, or nil when it cannot be read (no /proc).
    private static func procSelfMaps() -> String? {
        do { return try String(contentsOfFile: "/proc/self/maps", encoding: .utf8) } catch { return nil }
    }

    private static func mapStart(of env: OpaquePointer) -> UInt? {
        var fd: Int32 = -1
        var status = stat()
        // Not a failure to report: without the map's address, transactions get wide-open bounds
        // (see `beginTransaction`'s `mapStart == nil` case), which only skips the range checks.
        guard mdb_env_get_fd(env, &fd) == 0, fstat(fd, &status) == 0, let maps = procSelfMaps() else { return nil }
        var info = MDB_envinfo()
        mdb_env_info(env, &info)
        return mapStart(inMaps: maps, device: UInt64(status.st_dev), inode: UInt64(status.st_ino),
                        length: UInt(info.me_mapsize))
    }

    /// The start of the one mapping in `maps` (a /proc/self/maps listing) of the file with
    /// `device` and `inode`, `length` bytes long; nil when there is none, or more than one.
    ///
    /// The device matters: data files on different file systems share inode numbers (every
    /// fresh tmpfs numbers its files alike), and a store that took another's mapping for its
    /// own read every page as damaged. Two candidates (a file replaced while mapped) give nil:
    /// unchecked bounds, never wrong ones.
    static func mapStart(inMaps maps: String, device: UInt64, inode: UInt64, length: UInt) -> UInt? {
        // Linux's dev_t: the major number in bits 8-19 and 32-63, the minor in bits 0-7 and 20-31.
        let major = ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff)
        let minor = (device & 0xff) | ((device >> 12) & ~0xff)
        var found: UInt?
        // "start-end perms offset major:minor inode path", numbers in hex but the inode.
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, UInt64(fields[4]) == inode else { continue }
            let numbers = fields[3].split(separator: ":")
            guard numbers.count == 2, UInt64(numbers[0], radix: 16) == major, UInt64(numbers[1], radix: 16) == minor
            else { continue }
            let range = fields[0].split(separator: "-")
            guard range.count == 2, let low = UInt(range[0], radix: 16), let high = UInt(range[1], radix: 16),
                  high - low == length else { continue }
            if found != nil { return nil }
            found = low
        }
        return found
    }

    // MARK: - Map size

    /// The map size of this process, in bytes: `options.maxMapSize`, or larger when the file
    /// was last written by a process with a larger one (LMDB keeps the larger).
    package var mapSize: Int { currentMapSize.withLock { $0 } }

    // MARK: - Databases and maintenance

    /// Opens (creating when `create`) the named database in a write transaction of its own.
    /// Call before concurrent use; the returned handle is valid for the environment's life.
    package func openDatabase(named name: String, create: Bool = true) throws -> Database {
        let open = { (transaction: borrowing Transaction) throws -> Database in
            try transaction.openDatabase(named: name, create: create)
        }
        return options.readOnly ? try read(open) : try write(open)
    }

    /// Flushes the data buffers to disk (`mdb_env_sync`); with `force`, synchronously.
    package func sync(force: Bool = true) throws(LMDBError) {
        try gate.shared { () throws(LMDBError) in try check(mdb_env_sync(handle, force ? 1 : 0)) }
    }

    /// Page size and page counts (`mdb_env_stat` and `mdb_env_info`).
    package func statistics() throws(LMDBError) -> EnvironmentStatistics {
        var stat = MDB_stat()
        var info = MDB_envinfo()
        try gate.shared { () throws(LMDBError) in
            try check(mdb_env_stat(handle, &stat))
            try check(mdb_env_info(handle, &info))
        }
        return EnvironmentStatistics(
            pageSize: Int(stat.ms_psize), mapSize: Int(info.me_mapsize),
            lastPageNumber: Int(info.me_last_pgno), maxReaders: Int(info.me_maxreaders),
            readersInUse: Int(info.me_numreaders))
    }

    /// The ID of the last committed write transaction, by any process (`me_last_txnid`): it
    /// changes with every commit. Reads the meta pages in the map; no I/O, no lock.
    package func lastCommittedTransaction() throws(LMDBError) -> UInt64 {
        var info = MDB_envinfo()
        try gate.shared { () throws(LMDBError) in try check(mdb_env_info(handle, &info)) }
        return UInt64(info.me_last_txnid)
    }

    /// Clears reader slots of dead processes; returns how many were cleared.
    @discardableResult
    package func clearStaleReaders() throws(LMDBError) -> Int {
        var dead: Int32 = 0
        try gate.shared { () throws(LMDBError) in try check(mdb_reader_check(handle, &dead)) }
        return Int(dead)
    }

    /// Copies the environment into the open, empty file `fd` (`mdb_env_copyfd2`), with
    /// `compact`, omitting free pages. The copy is not fsynced: the caller does that.
    package func copy(toDescriptor fd: Int32, compact: Bool) throws(LMDBError) {
        try gate.shared { () throws(LMDBError) in try check(mdb_env_copyfd2(handle, fd, compact ? UInt32(MDB_CP_COMPACT) : 0)) }
    }

    /// The flags the environment was actually opened with (`mdb_env_get_flags`).
    package var flags: UInt32 {
        var flags: UInt32 = 0
        gate.shared { if let storedHandle { mdb_env_get_flags(storedHandle, &flags) } }
        return flags
    }

    /// Reader slots in use by live or dead processes (`mdb_reader_list` lines, header excluded).
    package func readerTable() -> [String] {
        final class Lines { var lines: [String] = [] }
        let lines = Lines()
        withExtendedLifetime(lines) { gate.shared {
            guard let storedHandle else { return }
            _ = mdb_reader_list(storedHandle, { message, context in
                let lines = Unmanaged<Lines>.fromOpaque(context!).takeUnretainedValue()
                lines.lines.append(String(cString: message!))
                return 0
            }, Unmanaged.passUnretained(lines).toOpaque())
        } }
        return lines.lines.filter { !$0.contains("pid") && !$0.contains("(no active readers)") }
    }

    /// The oldest snapshot any reader holds (the smallest transaction id in the reader
    /// table), or nil when no slot holds one.
    package func oldestReaderTransaction() -> UInt64? {
        // Lines are "pid thread txnid", txnid "-" for an idle slot (`mdb_reader_list`).
        readerTable().compactMap { $0.split(whereSeparator: \.isWhitespace).last.flatMap { UInt64($0) } }.min()
    }

    // MARK: - Registry

    private static let registry = LockedValue<[FileIdentity: WeakEnvironment]>([:])

    /// Whether this process has an environment open (or closing) at the directory `path`: while
    /// it has, `open` returns that one and restores no checkpoint (tests wait for it to go).
    package static func isOpenInThisProcess(path: String) -> Bool {
        guard let identity = FileIdentity(path: path) else { return false }
        return registry.withLock { $0[identity] != nil }
    }
}

/// Environment-wide numbers.
package struct EnvironmentStatistics: Sendable, Hashable {
    package var pageSize: Int
    package var mapSize: Int
    package var lastPageNumber: Int
    package var maxReaders: Int
    package var readersInUse: Int
    /// Bytes the data file really uses: pages up to the last one in use.
    package var usedBytes: Int { (lastPageNumber + 1) * pageSize }
}

/// A directory's identity, independent of how its path is spelled.
package struct FileIdentity: Hashable, Sendable {
    package var device: UInt64
    package var inode: UInt64

    /// The identity of the file or directory at `path`, or nil when it cannot be stat'ed.
    package init?(path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        self.init(device: UInt64(status.st_dev), inode: UInt64(status.st_ino))
    }

    package init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

private struct WeakEnvironment: @unchecked Sendable {
    // Only read and written under `Environment.registry`'s lock.
    weak var environment: Environment?
}
