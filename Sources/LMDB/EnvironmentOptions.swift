/// How an `Environment` is opened. Every choice that trades safety for speed is explicit here.
package struct EnvironmentOptions: Sendable, Hashable {
    /// The map size to start with, in bytes. LMDB reserves address space, not disk, for it.
    package var initialMapSize: Int = 64 << 20
    /// The map never grows past this; a write that needs more fails with `MDB_MAP_FULL`.
    package var maxMapSize: Int = 1 << 40
    /// Reader-table slots: one per concurrently open read transaction in all processes,
    /// so size it for the service's reader threads plus admin tools.
    package var maxReaders: UInt32 = 510
    /// Named databases the environment may hold.
    package var maxDatabases: UInt32 = 16
    /// `MDB_WRITEMAP`: faster bulk writes, but on a sparse file a full disk becomes
    /// `SIGBUS` instead of `ENOSPC`. Only enable it with the data file's blocks allocated ahead.
    package var writeMap = false
    /// `MDB_NOMETASYNC`: skip the meta-page fsync on commit; the caller then owns durability
    /// through `Environment.sync(force:)` (the write-ahead log does).
    package var noMetaSync = false
    /// `MDB_RDONLY`: open for reading only (admin tools inspecting a live store).
    package var readOnly = false
    /// Clear reader slots of dead processes when opening (`mdb_reader_check`). Off only for
    /// tools that show the reader table as it is (`imgstore-admin readers`).
    package var clearsStaleReaders = true
    /// The meta pages of the last checkpoint (`MetaPages.swift`), given only by an opener that
    /// holds the store's writer lock: when the data file's meta pages differ from them and no
    /// other process has the environment open, `Environment.open` writes them back first.
    package var checkpoint: MetaPages?
    /// Permissions of files LMDB creates.
    package var fileMode: UInt32 = 0o644

    package init() {}

    /// The `mdb_env_open` flags. `MDB_NOTLS` always (read transactions are not tied to a
    /// thread, so a pool of threads can share reader slots). Never `MDB_NOSYNC` at open: a
    /// commit without a sync is safe only once a checkpoint pins its snapshot and keeps its
    /// meta pages (`Environment.checkpoint`), which turns it on.
    var flags: UInt32 {
        var flags = UInt32(MDB_NOTLS_FLAG)
        if writeMap { flags |= UInt32(MDB_WRITEMAP_FLAG) }
        if noMetaSync { flags |= UInt32(MDB_NOMETASYNC_FLAG) }
        if readOnly { flags |= UInt32(MDB_RDONLY_FLAG) }
        return flags
    }
}

import CLMDB
let MDB_NOTLS_FLAG = MDB_NOTLS
let MDB_WRITEMAP_FLAG = MDB_WRITEMAP
let MDB_NOMETASYNC_FLAG = MDB_NOMETASYNC
let MDB_RDONLY_FLAG = MDB_RDONLY
