#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// One slot of LMDB's reader table, as `mdb_reader_list` prints it (and `mdb_stat -r`).
///
/// Under `MDB_NOTLS` a slot is taken for the length of one read transaction. A slot whose
/// process died stays taken until `mdb_reader_check` clears it (`Environment.clearStaleReaders`);
/// while it is there it pins the snapshot it read, so the file grows instead of reusing pages
/// (lmdb.h, caveats).
package struct ReaderSlot: Sendable, Hashable {
    /// The process that took the slot.
    package var pid: Int32
    /// Its thread, as LMDB prints it (hex).
    package var thread: String
    /// The snapshot (transaction id) it reads, or nil when it is between transactions.
    package var transaction: Int?
    /// Whether its process no longer exists, so `mdb_reader_check` would clear it.
    package var isStale: Bool

    /// Parses one `mdb_reader_list` line (`"%10d %zx %zu"`, or `-` for the transaction).
    init?(line: String) {
        let fields = line.split(whereSeparator: { $0 == " " || $0 == "\n" })
        guard fields.count == 3, let pid = Int32(fields[0]) else { return nil }
        self.pid = pid
        thread = String(fields[1])
        transaction = Int(fields[2])
        isStale = kill(pid, 0) != 0 && errno == ESRCH
    }
}

extension Environment {
    /// The reader table: every slot in use, by live or dead processes.
    package func readerSlots() -> [ReaderSlot] {
        readerTable().compactMap(ReaderSlot.init(line:))
    }
}
