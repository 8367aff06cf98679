import Foundation
import LMDB

extension ImageStore {
    /// The reader table of the store at `path`, slots of dead processes included: what
    /// `imgstore-admin readers` prints (like `mdb_stat -r`).
    ///
    /// Opens the LMDB environment read-only without clearing anything and never takes the
    /// writer lock, so it works next to a running service. A process that has the store open
    /// but is not inside a read transaction holds no slot (`MDB_NOTLS`).
    /// - Throws: `notAStore` when there is no `data.mdb`; storage errors.
    package static func readerSlots(path: String) throws(ImageStoreError) -> [ReaderSlot] {
        try openForReaders(path).readerSlots()
    }

    /// Clears the reader slots of dead processes of the store at `path` (`mdb_reader_check`,
    /// like `mdb_stat -rr`); returns how many were cleared. Safe while other processes use it.
    /// - Throws: `notAStore` when there is no `data.mdb`; storage errors.
    package static func clearStaleReaders(path: String) throws(ImageStoreError) -> Int {
        let environment = try openForReaders(path)
        return try ImageStoreError.rethrowing(path: path, operation: "clearing stale reader slots") {
            try environment.clearStaleReaders()
        }
    }

    private static func openForReaders(_ path: String) throws(ImageStoreError) -> Environment {
        guard FileManager.default.fileExists(atPath: path + "/data.mdb") else {
            throw .notAStore(path: path, found: "no data.mdb")
        }
        var options = EnvironmentOptions()
        options.readOnly = true
        options.clearsStaleReaders = false
        return try ImageStoreError.rethrowing(path: path, operation: "opening the LMDB environment") {
            try Environment.open(path: path, options: options)
        }
    }
}
