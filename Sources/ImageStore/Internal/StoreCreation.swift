import Foundation
import LMDB

/// Creating a store so that a power cut can never leave one that refuses to open.
///
/// LMDB commits under `MDB_NOMETASYNC` (`DurableTier.open` says why), so the transaction that
/// writes the format record is not durable when it returns: its meta page reaches the disk
/// with the next commit's sync, or never. A cut before then left a data file with LMDB's
/// empty meta pages, or an empty or all-zero file, beside a log that may already hold
/// acknowledged writes. Two rules close that window:
///
/// 1. Creation is durable before first use: LMDB is synced with its meta page, and the store
///    directory (and every directory created for it) is fsynced, before the store is used.
/// 2. A creation that a cut left unfinished is recognised and redone: a data file that no
///    transaction ever committed to, or that holds only zero bytes, has nothing to lose; the
///    store is created in it, and the log (if any) replays onto it.
///
/// A data file that holds data but lacks the format record is damaged, never "foreign": it is
/// `corruptStore`, and so is a foreign-looking LMDB file with log segments beside it. Only an
/// LMDB file with none of imgstore's databases and no log is `notAStore`.
enum StoreCreation {
    /// What opening found in the store directory's data file.
    enum DataFile: Equatable {
        /// No `data.mdb`: a new store.
        case missing
        /// `data.mdb` is empty or all zero bytes: a creation cut off before LMDB's pages
        /// reached the disk.
        case blank
        /// `data.mdb` has content (LMDB decides whether it is valid).
        case present
    }

    /// Classifies `path`'s data file. Reading stops at the first non-zero byte, so this is
    /// cheap for any real store; an unreadable file counts as present (LMDB reports why).
    static func dataFile(in path: String) -> DataFile {
        guard let file = FileHandle(forReadingAtPath: path + "/data.mdb") else {
            return FileManager.default.fileExists(atPath: path + "/data.mdb") ? .present : .missing
        }
        defer { file.closeFile() }  // read-only: closing cannot lose anything
        while true {
            let chunk: Data?
            do { chunk = try file.read(upToCount: 1 << 20) } catch { return .present }
            guard let chunk, !chunk.isEmpty else { return .blank }  // nil or empty: end of file
            if chunk.contains(where: { $0 != 0 }) { return .present }
        }
    }

    /// Removes an all-zero data file, which LMDB would refuse as invalid, so the store is
    /// created afresh. An empty one is left alone: LMDB initialises it as a new file, and a
    /// process creating the store at this moment has just made it. (`lock.mdb` is never
    /// touched: another process may be using it.)
    /// - Throws: `notWritable` when it cannot be removed.
    static func discardBlankDataFile(in path: String) throws(ImageStoreError) {
        let file = path + "/data.mdb"
        // One that cannot be stat'ed is not removed: LMDB's open then reports why it cannot be read.
        var status = stat()
        guard stat(file, &status) == 0, status.st_size > 0 else { return }
        do { try FileManager.default.removeItem(atPath: file) } catch {
            throw .notWritable(path: path, reason: "its all-zero data file from an unfinished creation cannot be removed (\(error.localizedDescription))")
        }
    }

    /// Whether no transaction ever committed to `environment`: its meta pages still describe
    /// an empty file (the last page in use is the second meta page). That is what LMDB leaves
    /// when a cut lost the creation transaction.
    static func isUncommitted(_ environment: Environment) throws -> Bool {
        try environment.statistics().lastPageNumber < 2
    }

    /// The error for a data file without a `meta` database or format record that is not an
    /// unfinished creation: damaged when anything of imgstore's is there, else foreign.
    /// `found` says what is missing; `foreign` is what `notAStore` says the file holds.
    static func missingMetadata(_ txn: borrowing Transaction, path: String, found: String, foreign: String) -> ImageStoreError {
        let ours = StoreFormat.dataDatabases.filter { name in
            // Any error opening it (MDB_NOTFOUND above all) means it is not there to count.
            do { _ = try txn.openDatabase(named: name, create: false); return true } catch { return false }
        }
        if !ours.isEmpty {
            return .corruptStore(path: path, detail: "its LMDB file holds imgstore's databases (\(ours.joined(separator: ", "))) but \(found)")
        }
        let segments = StoreDirectory.logSegments(in: path)
        if !segments.isEmpty {
            return .corruptStore(path: path, detail: "its LMDB file holds \(found), yet \(segments.count) write-ahead log segment(s) of the store lie beside it")
        }
        return .notAStore(path: path, found: foreign)
    }

    /// The error for a read-only open of a creation a cut left unfinished, which only a
    /// writer can finish.
    static func unfinished(path: String) -> ImageStoreError {
        let segments = StoreDirectory.logSegments(in: path)
        guard !segments.isEmpty else {
            return .notAStore(path: path, found: "no store yet (its creation never finished, and read-only opens do not create one)")
        }
        return .storage(path: path, detail: "the store's creation was cut off (by a crash or power loss) before it finished, and its write-ahead log holds \(segments.count) segment(s) of writes; open it once for writing to finish creating it and replay them")
    }

    /// Makes a just-created store durable before its first use: LMDB with its meta page
    /// (`mdb_env_sync(env, 1)`), then the store directory, so `data.mdb` and its format
    /// record survive a power cut.
    /// - Throws: `storage` when a sync fails.
    static func makeDurable(_ environment: Environment, path: String, fileSystem: any LogFileSystem) throws(ImageStoreError) {
        do { try environment.sync(force: true) } catch {
            throw .storage(path: path, detail: "syncing the new store's LMDB file failed: \(error)")
        }
        do { try fileSystem.syncDirectory(path) } catch {
            throw .storage(path: path, detail: "syncing the new store's directory failed: \(error)")
        }
    }
}
