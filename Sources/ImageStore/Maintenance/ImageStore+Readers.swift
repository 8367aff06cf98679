import Foundation
import LMDB

extension ImageStore {
    /// The reader table of the store at `path`, slots of dead processes included: what
    /// `imgstore-admin readers` prints (like `mdb_stat -r`).
    ///
    /// Opens the LMDB environment read-only without clearing anything, so it works next to a
    /// running service. It takes the writer lock only as a read-only store's open does: after a
    /// writer stopped without closing, when no writer holds the lock, for as long as it restores
    /// the last checkpoint (it waits, at most 10 s, for a starting writer to do that instead). A
    /// process that has the store open but is not inside a read transaction holds no slot
    /// (`MDB_NOTLS`).
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
        // As a read-only store opens: never beside a starting writer that has yet to restore what
        // a crash left (opening LMDB then could keep it from restoring, `DurableTier.open`).
        let (_, restoringLock, restore) = try DurableTier.keptCheckpoint(path: path, readOnly: true)
        var options = EnvironmentOptions()
        options.readOnly = true
        options.clearsStaleReaders = false
        options.checkpoint = restore
        return try ImageStoreError.rethrowing(path: path, operation: "opening the LMDB environment") {
            try withExtendedLifetime(restoringLock) { try Environment.open(path: path, options: options) }
        }
    }
}
