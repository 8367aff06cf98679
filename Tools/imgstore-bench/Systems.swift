import CLMDB
import CSQLite
import Foundation
import ImageStore

/// A key-value store under test: imgstore or one of the alternatives a user would pick instead.
///
/// Every method may be called from `maxThreads` threads at once; `thread` (0..<maxThreads) is the calling benchmark
/// thread, so systems that need per-thread handles (SQLite connections, LMDB read transactions) keep one per slot and
/// each slot is only ever touched by its thread.
protocol StoreSystem: Sendable {
    var name: String { get }
    /// Stores `data` for `url`, acknowledged as durably as the system's mode promises.
    func put(_ url: String, _ data: Data, thread: Int)
    /// Stores several entries in one transaction where the system has them; the default puts one by one.
    func putBatch(_ urls: ArraySlice<String>, _ images: ArraySlice<Data>, thread: Int)
    /// The bytes stored for `url`, copied out (what a caller gets), or nil.
    func get(_ url: String, thread: Int) -> Data?
    /// Reads the entry for `url` the way the system serves it best and returns its byte count, or nil. The default
    /// copies it out (`get`); a system that lends its bytes without a copy (`imgstore-borrowed`) reads them in place.
    func readBytes(_ url: String, thread: Int) -> Int?
    /// Completes what was acknowledged but not finished (imgstore: applies the log into LMDB). Timed by `put` cases,
    /// so "sustained" rates include it.
    func finish()
    func close()
}

extension StoreSystem {
    func putBatch(_ urls: ArraySlice<String>, _ images: ArraySlice<Data>, thread: Int) {
        for (url, image) in zip(urls, images) { put(url, image, thread: thread) }
    }
    func readBytes(_ url: String, thread: Int) -> Int? { get(url, thread: thread)?.count }
    func finish() {}
}

/// Threads a system is prepared for (the most any case uses).
let maxThreads = 16

/// A C handle shared between threads under the rules of its library, which the benchmark follows (one slot per
/// thread, or the library's own locking): only the raw pointer is exempt from checking.
struct RawHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("imgstore-bench: \(message)\n".utf8))
    exit(1)
}

// MARK: - imgstore

final class ImgStoreSystem: StoreSystem {
    let name: String
    let store: ImageStore
    let durability: Durability

    init(
        path: String, configuration: ImageStore.Configuration = .init(), durability: Durability = .sync,
        name: String = "imgstore"
    ) {
        do { store = try ImageStore(path: path, configuration: configuration) } catch { fail("open \(path): \(error)") }
        self.durability = durability
        self.name = name
    }

    func put(_ url: String, _ data: Data, thread: Int) {
        do { try store.put(data, for: url, durability: durability) } catch { fail("imgstore put \(url): \(error)") }
    }

    func get(_ url: String, thread: Int) -> Data? {
        do { return try store.image(for: url)?.data } catch { fail("imgstore get \(url): \(error)") }
    }

    /// `statistics()` settles the log: returns once every acknowledged put is applied to LMDB. Prints the group
    /// commit's shape (records per batch, fsync time) to stderr, for reading the put rows.
    func finish() {
        do { _ = try store.statistics() } catch { fail("imgstore statistics: \(error)") }
        reportGroupCommits(store, name)
    }

    func close() { store.close() }
}

/// The same store read through `withImage(for:)`: the checksum-verified bytes lent from LMDB's map inside the read
/// transaction, no copy (what a service writing them to a socket does). Reads only; puts go to `imgstore`.
final class BorrowedImgStore: StoreSystem {
    let name = "imgstore-borrowed"
    let store: ImageStore

    init(_ system: ImgStoreSystem) { store = system.store }

    func put(_ url: String, _ data: Data, thread: Int) { fail("imgstore-borrowed is read-only") }

    func get(_ url: String, thread: Int) -> Data? {
        do { return try store.withImage(for: url) { _, bytes in Data(bytes) } } catch { fail("imgstore withImage \(url): \(error)") }
    }

    func readBytes(_ url: String, thread: Int) -> Int? {
        do { return try store.withImage(for: url) { _, bytes in bytes.count } } catch {
            fail("imgstore withImage \(url): \(error)")
        }
    }

    func close() {}
}

/// One stderr line on how `store`'s group commit went: batches, records per batch, mean log fsync. The put rows'
/// throughput follows from these (a batch per fsync), so a slow row shows whether batches were small or syncs slow.
func reportGroupCommits(_ store: ImageStore, _ label: String) {
    let metrics = store.metrics
    let batches = metrics.groupCommitBatchRecords, syncs = metrics.logFsyncSeconds
    guard batches.count > 0 else { return }
    let perBatch = batches.sum / Double(batches.count)
    let fsync = syncs.count > 0 ? syncs.sum / Double(syncs.count) * 1e6 : 0
    let line = String(format: "%d group commits, %.1f records each, %d log fsyncs of %.0f µs mean",
                      batches.count, perBatch, syncs.count, fsync)
    FileHandle.standardError.write(Data("    \(label): \(line)\n".utf8))
}

extension ImageStore.Configuration {
    /// The default configuration with `writeMap` on (the `imgstore-writemap` rows).
    static var writeMapped: ImageStore.Configuration {
        var configuration = ImageStore.Configuration()
        configuration.writeMap = true
        return configuration
    }
}

// MARK: - Raw LMDB

/// LMDB through its C API with the least code: the floor for imgstore's wrapper. One named database keyed by URL.
/// Opened with `MDB_NOTLS` so each benchmark thread can keep a reset read transaction and renew it per get (the
/// fastest way to read LMDB); write flags are LMDB's defaults (a commit syncs data and meta pages), or `MDB_WRITEMAP`.
final class RawLMDB: StoreSystem {
    let name: String
    let env: RawHandle
    let dbi: MDB_dbi
    /// One reset read transaction per thread slot.
    let readers: [RawHandle]

    /// Whether each URL is stored under `FilesPerEntry.hashedName(url)` instead of itself.
    let hashedKeys: Bool

    /// `noMetaSync`: `MDB_NOMETASYNC`, as imgstore opens LMDB (its log makes the meta page's sync unnecessary).
    /// `noSync`: `MDB_NOSYNC`, as imgstore's writer commits between checkpoints (the caller syncs).
    /// `hashedKeys`: key each image by a hash of its URL, as imgstore does. The workload's URLs are numbered in the
    /// order they are put, so keyed by the URL itself the B-tree grows mostly at its end; hashed keys land on random
    /// leaves, and each commit writes more scattered pages (`Tools/put-trace`).
    init(name: String, path: String, writeMap: Bool = false, noMetaSync: Bool = false, noSync: Bool = false,
         hashedKeys: Bool = false) {
        self.name = name
        self.hashedKeys = hashedKeys
        var env: OpaquePointer?
        Self.check(mdb_env_create(&env), "mdb_env_create")
        Self.check(mdb_env_set_mapsize(env, 1 << 40), "mdb_env_set_mapsize")
        Self.check(mdb_env_set_maxreaders(env, 126), "mdb_env_set_maxreaders")
        Self.check(mdb_env_set_maxdbs(env, 1), "mdb_env_set_maxdbs")
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let flags = UInt32(MDB_NOTLS) | (writeMap ? UInt32(MDB_WRITEMAP) : 0) | (noMetaSync ? UInt32(MDB_NOMETASYNC) : 0)
            | (noSync ? UInt32(MDB_NOSYNC) : 0)
        Self.check(mdb_env_open(env, path, flags, 0o644), "mdb_env_open \(path)")
        var txn: OpaquePointer?
        var dbi: MDB_dbi = 0
        Self.check(mdb_txn_begin(env, nil, 0, &txn), "mdb_txn_begin")
        Self.check(mdb_dbi_open(txn, "images", UInt32(MDB_CREATE), &dbi), "mdb_dbi_open")
        Self.check(mdb_txn_commit(txn), "mdb_txn_commit")
        self.env = RawHandle(pointer: env!)
        self.dbi = dbi
        readers = (0..<maxThreads).map { _ in
            var reader: OpaquePointer?
            Self.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &reader), "mdb_txn_begin(RDONLY)")
            mdb_txn_reset(reader)
            return RawHandle(pointer: reader!)
        }
    }

    static func check(_ rc: Int32, _ what: String) {
        if rc != 0 { fail("\(what): \(String(cString: mdb_strerror(rc)))") }
    }

    func put(_ url: String, _ data: Data, thread: Int) {
        putBatch([url], [data], thread: thread)
    }

    /// One write transaction for the batch, committed (and, with default flags, synced) once.
    func putBatch(_ urls: ArraySlice<String>, _ images: ArraySlice<Data>, thread: Int) {
        write(zip(urls, images).lazy.map { (self.hashedKeys ? FilesPerEntry.hashedName($0) : $0, $1) }, flags: 0)
    }

    /// One write transaction putting `images` under `keys` as given (not hashed again), which must ascend past every
    /// key stored, with `MDB_APPEND`: LMDB fills pages in order without searching the tree (the recovery row's bound).
    func append(keys: [String], images: [Data]) {
        write(zip(keys, images), flags: UInt32(MDB_APPEND))
    }

    /// One write transaction putting each (key, value) of `pairs` with `mdb_put` flags `flags`, then committing.
    private func write<Pairs: Sequence<(String, Data)>>(_ pairs: Pairs, flags: UInt32) {
        var txn: OpaquePointer?
        Self.check(mdb_txn_begin(env.pointer, nil, 0, &txn), "mdb_txn_begin")
        for (key, image) in pairs {
            var key = key
            key.withUTF8 { key in
                image.withUnsafeBytes { value in
                    var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
                    var v = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
                    Self.check(mdb_put(txn, dbi, &k, &v, flags), "mdb_put")
                }
            }
        }
        Self.check(mdb_txn_commit(txn), "mdb_txn_commit")
    }

    /// Makes every commit durable (`mdb_env_sync(env, 1)`): what an `MDB_NOSYNC` environment's owner does at a
    /// checkpoint.
    func sync() {
        Self.check(mdb_env_sync(env.pointer, 1), "mdb_env_sync")
    }

    func get(_ url: String, thread: Int) -> Data? {
        withValue(url, thread: thread) { Data($0) }
    }

    /// `body` applied to the bytes stored for `url`, in place in LMDB's map inside a read transaction, or nil.
    func withValue<R>(_ url: String, thread: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        let txn = readers[thread].pointer
        Self.check(mdb_txn_renew(txn), "mdb_txn_renew")
        defer { mdb_txn_reset(txn) }
        var url = hashedKeys ? FilesPerEntry.hashedName(url) : url
        return url.withUTF8 { key in
            var k = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
            var v = MDB_val()
            let rc = mdb_get(txn, dbi, &k, &v)
            if rc == MDB_NOTFOUND { return nil }
            Self.check(rc, "mdb_get")
            return body(UnsafeRawBufferPointer(start: v.mv_data, count: v.mv_size))
        }
    }

    func close() {
        for reader in readers { mdb_txn_abort(reader.pointer) }
        mdb_env_close(env.pointer)
    }
}

/// Raw LMDB plus the checksum work every imgstore disk read does, and nothing else of imgstore: the bound of a
/// `get.disk-hit` row in the same run. Its rate divided by raw LMDB's is the best imgstore's row can reach against
/// raw LMDB while it verifies each read, since imgstore reads through LMDB too.
/// - `hashInPlace`: XXH3-64 of the mapped bytes where they lie (`Checksum.blob`), no copy: what `withImage(for:)`
///   adds to a lookup, so the bound of `imgstore-borrowed`.
/// - `verifiedCopy`: the copy with its hash fused (`Checksum.copyingBlob`, streaming stores for a blob the memory
///   tier may keep, as a disk hit makes it): what `image(for:)` adds to a lookup, so the bound of `imgstore`.
final class VerifiedLMDB: StoreSystem {
    enum Check { case hashInPlace, verifiedCopy }
    let name: String
    let lmdb: RawLMDB
    let check: Check

    init(_ lmdb: RawLMDB, _ check: Check) {
        self.lmdb = lmdb
        self.check = check
        name = switch check {
        case .hashInPlace: "lmdb+xxh3 in place (bound of borrowed)"
        case .verifiedCopy: "lmdb+verified copy (bound of imgstore)"
        }
    }

    func put(_ url: String, _ data: Data, thread: Int) { fail("\(name) is read-only") }

    /// The largest blob a disk hit copies with streaming stores (the memory tier's entry limit).
    private let keptUpTo = ImageStore.Configuration().memoryMaxEntryBytes

    /// Copies, as every system's `get` does; the rows read through `readBytes`.
    func get(_ url: String, thread: Int) -> Data? {
        lmdb.withValue(url, thread: thread) { Data($0) }
    }

    /// The byte count. Each checksum is compared (with 0, as a read compares it with the stored one), so its result
    /// is used: an unused result of an inlined hash could be dropped. A checksum of 0 (odds 2⁻⁶⁴) adds 1 to the count.
    func readBytes(_ url: String, thread: Int) -> Int? {
        lmdb.withValue(url, thread: thread) { bytes in
            let count: Int, checksum: UInt64
            switch check {
            case .hashInPlace:
                (count, checksum) = (bytes.count, Checksum.blob(bytes))
            case .verifiedCopy:
                let (copy, sum) = Checksum.copyingBlob(bytes, streaming: bytes.count <= keptUpTo)
                (count, checksum) = (copy.count, sum)
            }
            return checksum == 0 ? count &+ 1 : count
        }
    }

    func close() {}
}

// MARK: - SQLite

/// A blob table in SQLite (WAL mode), one connection per thread slot, prepared statements, a transaction per put
/// (autocommit) or per batch. `synchronous=FULL` syncs the WAL at every commit; `NORMAL` only at checkpoints.
final class SQLiteBlobs: StoreSystem {
    let name: String
    /// Per thread slot: connection, INSERT, SELECT.
    let connections: [(db: RawHandle, insert: RawHandle, select: RawHandle)]

    init(name: String, path: String, synchronous: String) {
        self.name = name
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let file = path + "/images.sqlite"
        connections = (0..<maxThreads).map { slot in
            var db: OpaquePointer?
            let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
            guard sqlite3_open_v2(file, &db, flags, nil) == SQLITE_OK, let db else { fail("sqlite3_open_v2 \(file)") }
            sqlite3_busy_timeout(db, 600_000)
            Self.exec(db, "PRAGMA journal_mode=WAL")
            Self.exec(db, "PRAGMA synchronous=\(synchronous)")
            if slot == 0 { Self.exec(db, "CREATE TABLE IF NOT EXISTS images (url TEXT PRIMARY KEY, data BLOB NOT NULL)") }
            return (
                RawHandle(pointer: db),
                Self.prepare(db, "INSERT OR REPLACE INTO images (url, data) VALUES (?1, ?2)"),
                Self.prepare(db, "SELECT data FROM images WHERE url = ?1")
            )
        }
    }

    static func exec(_ db: OpaquePointer, _ sql: String) {
        var message: UnsafeMutablePointer<CChar>?
        if sqlite3_exec(db, sql, nil, nil, &message) != SQLITE_OK {
            fail("sqlite3_exec \(sql): \(message.map { String(cString: $0) } ?? "?")")
        }
    }

    static func prepare(_ db: OpaquePointer, _ sql: String) -> RawHandle {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            fail("sqlite3_prepare_v2 \(sql): \(String(cString: sqlite3_errmsg(db)))")
        }
        return RawHandle(pointer: statement)
    }

    func put(_ url: String, _ data: Data, thread: Int) {
        insert(url, data, thread: thread)
    }

    func putBatch(_ urls: ArraySlice<String>, _ images: ArraySlice<Data>, thread: Int) {
        let db = connections[thread].db.pointer
        Self.exec(db, "BEGIN IMMEDIATE")
        for (url, image) in zip(urls, images) { insert(url, image, thread: thread) }
        Self.exec(db, "COMMIT")
    }

    private func insert(_ url: String, _ data: Data, thread: Int) {
        let (db, insert, _) = connections[thread]
        let statement = insert.pointer
        // SQLITE_STATIC (nil destructor): the buffers outlive the step; the bindings are cleared before they go.
        var url = url
        url.withUTF8 { key in
            data.withUnsafeBytes { value in
                sqlite3_bind_text(statement, 1, key.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, Int32(key.count), nil)
                sqlite3_bind_blob(statement, 2, value.baseAddress, Int32(value.count), nil)
                let rc = sqlite3_step(statement)
                if rc != SQLITE_DONE { fail("sqlite3_step INSERT: \(String(cString: sqlite3_errmsg(db.pointer)))") }
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            }
        }
    }

    func get(_ url: String, thread: Int) -> Data? {
        let (db, _, select) = connections[thread]
        let statement = select.pointer
        var url = url
        return url.withUTF8 { key in
            sqlite3_bind_text(statement, 1, key.baseAddress.map { UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self) }, Int32(key.count), nil)
            defer {
                sqlite3_reset(statement)
                sqlite3_clear_bindings(statement)
            }
            switch sqlite3_step(statement) {
            case SQLITE_ROW:
                let count = Int(sqlite3_column_bytes(statement, 0))
                guard let bytes = sqlite3_column_blob(statement, 0) else { return Data() }
                return Data(bytes: bytes, count: count)
            case SQLITE_DONE: return nil
            default: fail("sqlite3_step SELECT: \(String(cString: sqlite3_errmsg(db.pointer)))")
            }
        }
    }

    func close() {
        for (db, insert, select) in connections {
            sqlite3_finalize(insert.pointer)
            sqlite3_finalize(select.pointer)
            sqlite3_close_v2(db.pointer)
        }
    }
}

// MARK: - One file per entry

/// How iOS image caches (SDWebImage, Kingfisher, Nuke's DataCache) keep blobs: a file per entry named by a hash of the
/// URL, here in 256 fan-out directories. `fsync`: write a temp file, fsync it, rename it into place, fsync the
/// directory (what durability needs); otherwise the same without any fsync (what those caches do by default).
final class FilesPerEntry: StoreSystem {
    let name: String
    let root: String
    let sync: Bool

    init(name: String, path: String, sync: Bool) {
        self.name = name
        root = path
        self.sync = sync
        for fanOut in 0..<256 {
            try? FileManager.default.createDirectory(
                atPath: root + "/" + String(format: "%02x", fanOut), withIntermediateDirectories: true)
        }
        if sync { Self.syncDirectory(root) }
    }

    /// FNV-1a 64 of the URL, as 16 hex digits: the same URLs in an order unrelated to their numbering.
    static func hashedName(_ url: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in url.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The URL's file: named by `hashedName`, whose first two digits name the fan-out directory.
    func location(_ url: String) -> (directory: String, file: String) {
        let name = Self.hashedName(url)
        let directory = root + "/" + name.prefix(2)
        return (directory, directory + "/" + name)
    }

    func put(_ url: String, _ data: Data, thread: Int) {
        let (directory, file) = location(url)
        let temporary = file + ".tmp\(thread)"
        let fd = open(temporary, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0 { fail("open \(temporary): \(String(cString: strerror(errno)))") }
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n < 0 { fail("write \(temporary): \(String(cString: strerror(errno)))") }
                offset += n
            }
        }
        if sync && fsync(fd) != 0 { fail("fsync \(temporary): \(String(cString: strerror(errno)))") }
        Glibc.close(fd)
        if rename(temporary, file) != 0 { fail("rename \(temporary): \(String(cString: strerror(errno)))") }
        if sync { Self.syncDirectory(directory) }
    }

    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 || fsync(fd) != 0 { fail("fsync directory \(path): \(String(cString: strerror(errno)))") }
        Glibc.close(fd)
    }

    func get(_ url: String, thread: Int) -> Data? {
        let file = location(url).file
        let fd = open(file, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            fail("open \(file): \(String(cString: strerror(errno)))")
        }
        defer { Glibc.close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { fail("fstat \(file)") }
        var data = Data(count: Int(status.st_size))
        let complete = data.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = read(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
        return complete ? data : nil
    }

    func close() {}
}

// MARK: - NSCache

/// Foundation's `NSCache` holding the images under `NSString` URLs, with the memory tier's limits. Values are `Data`
/// in a small box, as Swift code uses NSCache (on Linux, turning an `NSData` back into `Data` copies it byte by byte,
/// which would measure the bridge, not the cache).
///
/// `@unchecked Sendable`: NSCache is documented as thread-safe (it locks internally) but is not annotated `Sendable`
/// in swift-corelibs-foundation.
final class NSCacheSystem: StoreSystem, @unchecked Sendable {
    let name = "nscache"
    final class Box {
        let data: Data
        init(_ data: Data) { self.data = data }
    }

    let cache = NSCache<NSString, Box>()

    init(costLimit: Int) {
        cache.totalCostLimit = costLimit
    }

    func put(_ url: String, _ data: Data, thread: Int) {
        cache.setObject(Box(data), forKey: url as NSString, cost: data.count)
    }

    func get(_ url: String, thread: Int) -> Data? {
        cache.object(forKey: url as NSString)?.data
    }

    func close() { cache.removeAllObjects() }
}
