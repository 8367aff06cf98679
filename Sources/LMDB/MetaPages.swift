import CLMDB
import CXXHash
import Locking
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// The first bytes of `data.mdb`'s two meta pages, as a checkpoint made them durable: what lets a
/// writer commit without syncing (`MDB_NOSYNC`) between checkpoints and still never open a
/// damaged file after a power cut.
///
/// Without a sync, a commit's meta page may reach the disk before the pages it points to, and
/// after a power cut LMDB would follow it into pages that hold nothing or older data. A store's
/// writer has its write-ahead log, which holds every write since the last checkpoint, so it only
/// needs LMDB back as the checkpoint left it. Three rules give exactly that:
/// 1. **Keep the meta pages.** A checkpoint syncs LMDB (`mdb_env_sync(env, 1)`), then its caller
///    makes these bytes durable in a file of its own, before any unsynced commit follows.
/// 2. **Pin the snapshot.** Then the writer holds a read transaction on that snapshot
///    (`pinNewestSnapshot`) until the next checkpoint. LMDB reuses only pages freed by
///    transactions older than the oldest reader, so no commit overwrites a page that the
///    checkpoint's tree, or the one before it (the other meta page), can reach. Pages past the
///    checkpoint's last page are free in its state, whatever a commit wrote there.
/// 3. **Restore before opening.** An opener that holds the store's writer lock passes the kept
///    pages (`EnvironmentOptions.checkpoint`). When the data file's meta pages differ and no
///    other process has the environment open, `Environment.open` writes the kept ones back and
///    syncs them first: LMDB then opens the checkpoint's state, intact by rule 2, and the log
///    replays the rest. A process with the environment open proves there was no power cut since
///    it opened (a file system cannot be remounted under it), so the page cache, and the newest
///    meta page, are whole: nothing is restored then.
///
/// Before writing them back, the open checks that the file still holds the checkpoint's tree: the
/// root pages of its two databases, as the newer kept meta page names them, must hash as they did
/// at the checkpoint (`rootsChecksum`). A file put in place under the same name, or copied over
/// this one, or cut short, fails that, and is opened as it stands.
///
/// A killed writer (no power cut) is rolled back the same way: the log holds every write it
/// acknowledged. Only commits that are not in the log are lost then (access times, evictions,
/// expiry sweeps, which run again), as after a power cut.
package struct MetaPages: Hashable, Sendable {
    /// Bytes kept from the start of each meta page: the page header (16 bytes) and `MDB_meta`
    /// (136 bytes on 64-bit), with room to spare. LMDB writes nothing else in a meta page after
    /// creating the file.
    package static let prefixBytes = 256
    /// Where `mm_txnid`, the last field of `MDB_meta`, lies in its page (64-bit builds).
    static let transactionOffset = 16 + 128

    /// The data file the pages belong to: a file put in its place (a compaction) has others.
    package var dataFile: FileIdentity
    package var pageSize: Int
    /// `prefixBytes` of page 0, then `prefixBytes` of page 1.
    package var bytes: [UInt8]
    /// XXH3-64 of the root pages the newer meta page names (`rootsChecksum(fd:)`).
    package var rootsChecksum: UInt64

    package init(dataFile: FileIdentity, pageSize: Int, bytes: [UInt8], rootsChecksum: UInt64) {
        precondition(bytes.count == 2 * Self.prefixBytes && pageSize >= Self.prefixBytes)
        self.dataFile = dataFile
        self.pageSize = pageSize
        self.bytes = bytes
        self.rootsChecksum = rootsChecksum
    }

    /// Where `MDB_meta`'s fields lie in its page (64-bit builds): the free database's root
    /// (`mm_dbs[0].md_root`), then the main database's (`mm_dbs[1].md_root`).
    private static let rootOffsets = [16 + 24 + 40, 16 + 24 + 48 + 40]

    /// XXH3-64 of the root pages of both databases that the newer of the two meta pages in
    /// `bytes` names, read from the data file open at `fd` (an empty database, root `P_INVALID`,
    /// adds nothing). Nil when a root lies past the end of the file.
    static func rootsChecksum(fd: Int32, pageSize: Int, bytes: [UInt8]) -> UInt64? {
        bytes.withUnsafeBytes { raw -> UInt64? in
            let first = raw.loadUnaligned(fromByteOffset: transactionOffset, as: UInt64.self)
            let second = raw.loadUnaligned(fromByteOffset: prefixBytes + transactionOffset, as: UInt64.self)
            let meta = second > first ? prefixBytes : 0
            var page = [UInt8](repeating: 0, count: pageSize)
            var checksum: UInt64 = 0
            for offset in rootOffsets {
                let root = raw.loadUnaligned(fromByteOffset: meta + offset, as: UInt64.self)
                guard root != UInt64.max else { continue }
                let (number, overflow) = root.multipliedReportingOverflow(by: UInt64(pageSize))
                guard !overflow, number < UInt64(Int64.max) else { return nil }
                let done = page.withUnsafeMutableBytes { pread(fd, $0.baseAddress, pageSize, off_t(number)) }
                guard done == pageSize else { return nil }
                checksum = page.withUnsafeBytes { XXH3_64bits_withSeed($0.baseAddress, pageSize, checksum) }
            }
            return checksum
        }
    }

    /// The newer of the two transactions the meta pages record: the snapshot LMDB opens.
    package var newestTransaction: UInt64 {
        bytes.withUnsafeBytes { raw in
            max(raw.loadUnaligned(fromByteOffset: Self.transactionOffset, as: UInt64.self),
                raw.loadUnaligned(fromByteOffset: Self.prefixBytes + Self.transactionOffset, as: UInt64.self))
        }
    }

    /// The kept bytes of both meta pages of the data file open at `fd`.
    static func read(fd: Int32, pageSize: Int) throws(LMDBError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 2 * prefixBytes)
        for page in 0..<2 {
            let done = bytes.withUnsafeMutableBytes { raw in
                pread(fd, raw.baseAddress! + page * prefixBytes, prefixBytes, off_t(page * pageSize))
            }
            guard done == prefixBytes else { throw done < 0 ? LMDBError(code: errno) : LMDBError.corrupted }
        }
        return bytes
    }
}

/// A read transaction held on the checkpointed snapshot. Only the writer queue begins and ends
/// it, under `Environment.pin`'s lock.
struct PinnedSnapshot: @unchecked Sendable {
    let transaction: OpaquePointer
}

extension Environment {
    /// The kept bytes of this environment's meta pages as they stand (in the page cache).
    package func metaPages() throws(LMDBError) -> MetaPages {
        try gate.shared { () throws(LMDBError) -> MetaPages in
            var fd: mdb_filehandle_t = -1
            try check(mdb_env_get_fd(handle, &fd))
            var status = stat()
            guard fstat(fd, &status) == 0 else { throw LMDBError(code: errno) }
            let bytes = try MetaPages.read(fd: fd, pageSize: pageSize)
            guard let roots = MetaPages.rootsChecksum(fd: fd, pageSize: pageSize, bytes: bytes) else { throw LMDBError.corrupted }
            return MetaPages(dataFile: FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)),
                             pageSize: pageSize, bytes: bytes, rootsChecksum: roots)
        }
    }

    /// Holds a read transaction on the newest snapshot (rule 2 of `MetaPages`) in place of the one
    /// held before. Called on the writer's thread, right after the checkpoint whose meta pages
    /// record `transaction`, with no commit in between.
    /// - Throws: `readersFull` when the reader table has no free slot (nothing held then), and
    ///   `LMDBError.corrupted` if the newest snapshot is not `transaction` (a commit slipped in).
    package func pinNewestSnapshot(expecting transaction: UInt64) throws(LMDBError) {
        try gate.shared { () throws(LMDBError) in
            var txn: OpaquePointer?
            try check(mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn))
            guard UInt64(mdb_txn_id(txn)) == transaction else {
                mdb_txn_abort(txn)
                throw LMDBError.corrupted
            }
            let old = pin.withLock { pin in
                defer { pin = PinnedSnapshot(transaction: txn!) }
                return pin
            }
            if let old { mdb_txn_abort(old.transaction) }
        }
    }

    /// Ends the pinned read transaction, if any. No commit may rely on the pin afterwards: the
    /// caller holds the gate exclusively, is closing the handle, or made commits synced and
    /// removed the file that named the snapshot.
    package func unpin() {
        if let old = pin.withLock({ pin in defer { pin = nil }; return pin }) { mdb_txn_abort(old.transaction) }
    }

    /// Whether commits skip their sync (`MDB_NOSYNC`, changed on the open handle). Only after a
    /// checkpoint kept its meta pages and pinned its snapshot (`MetaPages`).
    package func setUnsyncedCommits(_ unsynced: Bool) throws(LMDBError) {
        try gate.shared { () throws(LMDBError) in try check(mdb_env_set_flags(handle, UInt32(MDB_NOSYNC), unsynced ? 1 : 0)) }
    }

    /// Rule 3 of `MetaPages`: writes `checkpoint`'s meta pages back into `directory`'s data file
    /// and syncs them, when the file is the one they were kept from, its meta pages differ, and
    /// no other process has the environment open. Called only while this process has no
    /// environment open on the file, by an opener holding the store's writer lock.
    /// - Returns: whether it wrote them.
    @discardableResult
    static func restore(_ checkpoint: MetaPages, directory: String, options: EnvironmentOptions) throws(LMDBError) -> Bool {
        let path = directory + "/data.mdb"
        // Read-only first: a read-only opener may have no right to write, and needs none when
        // the pages agree.
        let reader = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard reader >= 0 else {
            if errno == ENOENT { return false }
            throw LMDBError(code: errno)
        }
        defer { Glibc.close(reader) }
        var status = stat()
        guard fstat(reader, &status) == 0 else { throw LMDBError(code: errno) }
        guard FileIdentity(device: UInt64(status.st_dev), inode: UInt64(status.st_ino)) == checkpoint.dataFile,
              try MetaPages.read(fd: reader, pageSize: checkpoint.pageSize) != checkpoint.bytes,
              MetaPages.rootsChecksum(fd: reader, pageSize: checkpoint.pageSize, bytes: checkpoint.bytes) == checkpoint.rootsChecksum
        else { return false }
        // Held while writing, so no other process opens the environment meanwhile; closing the
        // descriptor drops it (this process has no other lock on the file to lose).
        // A read-only opener on a read-only file system, or without the right to write, reads
        // the file as it stands (whole unless a power cut came after the writer's last
        // checkpoint); the next writer restores it.
        let cannotWrite = { (code: Int32) in options.readOnly && (code == EROFS || code == EACCES) }
        let lockFile: LockFile?
        do { lockFile = try LockFile(directory: directory) } catch {
            guard error.code == ENOENT else {
                if cannotWrite(error.code) { return false }
                throw error
            }
            lockFile = nil
        }
        defer { lockFile?.close() }
        if let lockFile, !(try lockFile.lockExclusively()) { return false }
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC)
        if fd < 0 && cannotWrite(errno) { return false }
        guard fd >= 0 else { throw LMDBError(code: errno) }
        defer { Glibc.close(fd) }
        return try write(checkpoint, to: fd)
    }

    private static func write(_ checkpoint: MetaPages, to fd: Int32) throws(LMDBError) -> Bool {
        for page in 0..<2 {
            let done = checkpoint.bytes.withUnsafeBytes { raw in
                pwrite(fd, raw.baseAddress! + page * MetaPages.prefixBytes, MetaPages.prefixBytes, off_t(page * checkpoint.pageSize))
            }
            guard done == MetaPages.prefixBytes else { throw LMDBError(code: done < 0 ? errno : EIO) }
        }
        while fdatasync(fd) != 0 {
            guard errno == EINTR else { throw LMDBError(code: errno) }
        }
        return true
    }
}
