import Foundation
import LMDB

/// The LMDB side of the store: entries and blobs in one environment, laid out as
/// `StoreFormat.swift` describes. Reads run on the caller's thread in their own snapshot;
/// every write runs on `writer`, one serial queue, so LMDB's writer lock is always taken and
/// released on the same thread and writers never contend for it.
final class DurableTier: Sendable {
    let environment: Environment
    let path: String
    let maxMapSize: Int
    private let meta: Database
    private let entries: Database
    private let blobs: Database
    private let writer = DispatchQueue(label: "imgstore.writer")
    private let keyHasher: @Sendable (String) -> [UInt8]

    private init(environment: Environment, path: String, maxMapSize: Int, databases: (Database, Database, Database),
                 keyHasher: @escaping @Sendable (String) -> [UInt8]) {
        self.environment = environment
        self.path = path
        self.maxMapSize = maxMapSize
        (meta, entries, blobs) = databases
        self.keyHasher = keyHasher
    }

    // MARK: - Opening

    /// Opens the store directory at `path`, creating it (and the store) when missing.
    /// - Throws: `notADirectory`, `notWritable`, `notAStore`, `newerFormat`, `corruptStore`.
    static func open(path: String, configuration: ImageStore.Configuration) throws(ImageStoreError) -> DurableTier {
        try StoreDirectory.prepare(path)
        let isNew = !FileManager.default.fileExists(atPath: path + "/data.mdb")
        if isNew, let found = StoreDirectory.describeForeignContents(path) {
            throw .notAStore(path: path, found: found)
        }
        var options = EnvironmentOptions()
        options.initialMapSize = configuration.initialMapSize
        options.maxMapSize = max(configuration.maxMapSize, configuration.initialMapSize)
        options.maxReaders = UInt32(clamping: configuration.maxReaders)
        options.writeMap = configuration.writeMap
        let environment: Environment
        do {
            environment = try Environment.open(path: path, options: options)
        } catch LMDBError.invalid {
            throw .corruptStore(path: path, detail: "data.mdb is not a valid LMDB file")
        } catch LMDBError.accessDenied {
            throw .notWritable(path: path, reason: "permission denied opening its files")
        } catch {
            throw .from(error, path: path, operation: "opening the LMDB environment", maxMapSize: options.maxMapSize)
        }
        do {
            let databases = try environment.write { txn throws -> (Database, Database, Database) in
                let meta: Database
                do {
                    meta = try txn.openDatabase(named: StoreFormat.metaDatabase, create: isNew)
                } catch LMDBError.notFound {
                    throw ImageStoreError.notAStore(path: path, found: "an LMDB database without imgstore's metadata")
                }
                if isNew {
                    try txn.put(meta, key: StoreFormat.formatKey, value: StoreFormat.formatRecord)
                } else {
                    try checkFormat(txn.get(meta, key: StoreFormat.formatKey), path: path)
                }
                return (meta,
                        try txn.openDatabase(named: StoreFormat.entriesDatabase, create: true),
                        try txn.openDatabase(named: StoreFormat.blobsDatabase, create: true))
            }
            return DurableTier(environment: environment, path: path, maxMapSize: options.maxMapSize,
                               databases: databases, keyHasher: configuration.keyHasher)
        } catch {
            throw .from(error, path: path, operation: "reading the store's metadata", maxMapSize: options.maxMapSize)
        }
    }

    private static func checkFormat(_ record: UnsafeRawBufferPointer?, path: String) throws(ImageStoreError) {
        guard let record, record.count == StoreFormat.magic.count + 4,
              Array(record.prefix(StoreFormat.magic.count)) == StoreFormat.magic
        else { throw .notAStore(path: path, found: "an LMDB database whose format record is not imgstore's") }
        let version = ByteReader(bytes: record).integer(at: StoreFormat.magic.count, as: UInt32.self)!
        guard version <= StoreFormat.version else {
            throw .newerFormat(path: path, found: version, supported: StoreFormat.version)
        }
    }

    // MARK: - Reads

    /// The record and bytes stored for `cacheKey`, verified against the record's checksum.
    /// - Throws: `checksumMismatch` when the bytes are corrupt (they are not returned).
    func get(cacheKey: String) throws(ImageStoreError) -> (EntryRecord, Data)? {
        try reading("reading an entry") { txn in
            guard let (key, record) = try locate(cacheKey, in: txn) else { return nil }
            guard let blob = try txn.get(blobs, key: key) else {
                throw ImageStoreError.corruptStore(path: path, detail: "the entry for \(record.url) has no image bytes")
            }
            let actual = Checksum.blob(blob)
            guard blob.count == record.byteCount, actual == record.checksum else {
                throw ImageStoreError.checksumMismatch(url: record.url, expected: record.checksum, actual: actual)
            }
            return (record, Data(blob))
        }
    }

    /// The record stored for `cacheKey`, without touching its bytes.
    func record(cacheKey: String) throws(ImageStoreError) -> EntryRecord? {
        try reading("reading an entry") { txn in try locate(cacheKey, in: txn)?.record }
    }

    /// Calls `body` with every entry's record in key order, in one snapshot, until it returns false.
    func forEachRecord(_ body: (EntryRecord) throws -> Bool) throws(ImageStoreError) {
        try reading("listing entries") { txn in
            try txn.scan(entries) { key, value in
                guard let record = EntryRecord(decoding: value) else {
                    throw ImageStoreError.corruptStore(path: path, detail: "an entry record is malformed (key \(Self.hex(key)))")
                }
                return try body(record)
            }
        }
    }

    /// Entry count and the logical-bytes counter, from one snapshot.
    func counts() throws(ImageStoreError) -> (entries: Int, logicalBytes: Int) {
        try reading("reading statistics") { txn in
            (try txn.statistics(entries).entries, try logicalBytes(in: txn))
        }
    }

    // MARK: - Writes

    /// Stores `data` under `record.cacheKey`, replacing any previous entry for it.
    func put(_ record: EntryRecord, data: Data) throws(ImageStoreError) {
        try writing("storing an entry", bytes: data.count) { txn in
            let existing = try locate(record.cacheKey, in: txn)
            let key = try existing?.key ?? freeSlot(for: record.cacheKey, in: txn)
            try key.withUnsafeBytes { key in
                try txn.put(blobs, key: key, reserving: data.count) { destination in
                    data.withUnsafeBytes { destination.copyMemory(from: $0) }
                }
            }
            try txn.put(entries, key: key, value: record.encoded())
            try addLogicalBytes(data.count - (existing?.record.byteCount ?? 0), in: txn)
        }
    }

    /// Removes the entry for `cacheKey`; returns whether there was one.
    func remove(cacheKey: String) throws(ImageStoreError) -> Bool {
        try writing("removing an entry") { txn in
            guard let (key, record) = try locate(cacheKey, in: txn) else { return false }
            try txn.delete(entries, key: key)
            try txn.delete(blobs, key: key)
            try addLogicalBytes(-record.byteCount, in: txn)
            return true
        }
    }

    /// Removes every entry in one transaction.
    func removeAll() throws(ImageStoreError) {
        try writing("removing all entries") { txn in
            try txn.removeAll(entries)
            try txn.removeAll(blobs)
            try txn.put(meta, key: StoreFormat.logicalBytesKey, value: Self.encode(UInt64(0)))
        }
    }

    /// Waits until every write queued before this call has finished.
    func drainWrites() { writer.sync {} }

    // MARK: - Helpers

    /// Finds the slot holding `cacheKey` by visiting every slot of its hash: a collision never
    /// returns another key's entry.
    private func locate(_ cacheKey: String, in txn: borrowing Transaction) throws -> (key: [UInt8], record: EntryRecord)? {
        let hash = keyHasher(cacheKey)
        var found: (key: [UInt8], record: EntryRecord)?
        try (hash + [0, 0]).withUnsafeBytes { start in
            try txn.scan(entries, from: start) { key, value in
                guard key.count == StoreFormat.entryKeyByteCount, key.starts(with: hash) else { return false }
                guard let record = EntryRecord(decoding: value) else {
                    throw ImageStoreError.corruptStore(path: path, detail: "an entry record is malformed (key \(Self.hex(key)))")
                }
                if record.cacheKey == cacheKey {
                    found = (Array(key), record)
                    return false
                }
                return true
            }
        }
        return found
    }

    /// The next unused collision slot for `cacheKey`'s hash.
    private func freeSlot(for cacheKey: String, in txn: borrowing Transaction) throws -> [UInt8] {
        let hash = keyHasher(cacheKey)
        var next = 0
        try (hash + [0, 0]).withUnsafeBytes { start in
            try txn.scan(entries, from: start) { key, _ in
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

    private func logicalBytes(in txn: borrowing Transaction) throws -> Int {
        guard let value = try txn.get(meta, key: StoreFormat.logicalBytesKey) else { return 0 }
        return Int(ByteReader(bytes: value).integer(at: 0, as: UInt64.self) ?? 0)
    }

    private func addLogicalBytes(_ delta: Int, in txn: borrowing Transaction) throws {
        let total = try logicalBytes(in: txn) + delta
        // Invariant: the counter equals the sum of all blobs' sizes, so it never goes negative.
        assert(total >= 0, "logical-bytes counter went negative")
        try txn.put(meta, key: StoreFormat.logicalBytesKey, value: Self.encode(UInt64(max(0, total))))
    }

    private static func encode(_ value: UInt64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian) { Array($0) } }
    private static func hex(_ bytes: UnsafeRawBufferPointer) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    private func reading<R>(_ operation: String, _ body: (borrowing Transaction) throws -> R) throws(ImageStoreError) -> R {
        do { return try environment.read(body) } catch {
            throw .from(error, path: path, operation: operation, maxMapSize: maxMapSize)
        }
    }

    /// Runs `body` in a write transaction on the writer queue.
    ///
    /// LMDB reports a write cut short by a full disk as `EIO`, not `ENOSPC` (a short `pwrite`
    /// in `mdb_page_flush`), so an I/O error while the file system has less room left than
    /// the write needed (`bytes` plus slack for pages and metadata) is reported as a full disk.
    private func writing<R>(_ operation: String, bytes: Int = 0, _ body: (borrowing Transaction) throws -> R) throws(ImageStoreError) -> R {
        do {
            return try writer.sync {
                try environment.write { txn in
                    dispatchPrecondition(condition: .onQueue(writer))
                    return try body(txn)
                }
            }
        } catch LMDBError.ioError where FileSystem.availableBytes(at: path).map({ $0 < bytes + (1 << 20) }) ?? false {
            throw .diskFull(path: path)
        } catch {
            throw .from(error, path: path, operation: operation, maxMapSize: maxMapSize)
        }
    }
}
