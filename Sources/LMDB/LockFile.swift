#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Probes the lock LMDB takes on byte 0 of `lock.mdb`, to prove that no other process has the
/// environment open.
///
/// What LMDB does (mdb.c, `mdb_env_excl_lock` and `mdb_env_share_locks`, Linux): `mdb_env_open`
/// tries an exclusive `fcntl(F_SETLK)` `F_WRLCK` on byte 0 of `lock.mdb`. The first opener gets
/// it, resets the lock region (reader table and transaction counter) and downgrades it to a
/// shared `F_RDLCK`; every later opener waits for a shared lock (`F_SETLKW`). Each process,
/// `MDB_RDONLY` ones included, keeps the shared lock until it closes the environment, whether
/// or not it is inside a transaction. So an exclusive lock on byte 0 is held only by the one
/// process that has the environment open, which a reader table (empty for an idle process
/// under `MDB_NOTLS`) cannot show.
///
/// `fcntl` locks belong to the process, and closing *any* descriptor of `lock.mdb` drops all of
/// them, LMDB's own included (lmdb.h, caveats). So the descriptor is opened once, right after
/// the environment, and closed only after `mdb_env_close`.
struct LockFile: Sendable {
    let fd: Int32

    /// Opens the environment's `lock.mdb` for probing (read-write: an exclusive lock needs it).
    init(directory: String) throws(LMDBError) {
        fd = open(directory + "/lock.mdb", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw LMDBError(code: errno) }
    }

    /// Closes the descriptor; only after `mdb_env_close`, which drops this process's locks anyway.
    func close() { _ = Glibc.close(fd) }

    /// The pid of another process that has the environment open, or nil when none has.
    /// `F_GETLK` never reports this process's own locks, so it can be asked while this process
    /// has the environment open.
    func otherHolder() throws(LMDBError) -> pid_t? {
        var lock = Self.byteZero(F_WRLCK)
        guard fcntl(fd, F_GETLK, &lock) == 0 else { throw LMDBError(code: errno) }
        return lock.l_type == Int16(F_UNLCK) ? nil : lock.l_pid
    }

    /// Takes byte 0 exclusively without waiting, as a first `mdb_env_open` would; only while this
    /// process has the environment closed. Returns false when another process holds it.
    ///
    /// While held, every other `mdb_env_open` waits (a read-write one before it opens
    /// `data.mdb`, an `MDB_RDONLY` one right after). This process's next `mdb_env_open` takes the
    /// same lock (it is already this process's), resets the lock region and downgrades it.
    func lockExclusively() throws(LMDBError) -> Bool {
        var lock = Self.byteZero(F_WRLCK)
        while fcntl(fd, F_SETLK, &lock) != 0 {
            switch errno {
            case EINTR: continue
            case EAGAIN, EACCES: return false
            default: throw LMDBError(code: errno)
            }
        }
        return true
    }

    private static func byteZero(_ type: Int32) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        return lock
    }
}

extension LMDBError {
    /// `EBUSY`: another process has the environment open, so it cannot be replaced.
    package static let busy = LMDBError(code: EBUSY)
    /// `EBADF`: the environment could not be reopened after its data file was replaced; every
    /// later call fails with this. The data file on disk is whole: reopen the environment.
    package static let lost = LMDBError(code: EBADF)
}
