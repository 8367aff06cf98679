import CLMDB

/// An error returned by an `mdb_*` call: LMDB's own codes (`MDB_NOTFOUND`, `MDB_MAP_FULL`, …)
/// or a plain `errno` value (`ENOSPC`, `EACCES`, …), which LMDB passes through.
///
/// An open struct rather than an enum, as in swift-system's `Errno`: LMDB may return codes this
/// wrapper does not name. Match the named ones with `~=` in a `catch`:
/// ```swift
/// do { try env.write { … } } catch LMDBError.mapFull { … }
/// ```
package struct LMDBError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The raw return code of the failing call.
    package let code: Int32
    /// What the wrapper found, when it raised the error itself (a file cut short, a cursor
    /// going backwards); nil for codes LMDB returned. Not part of equality: errors match by code.
    package let detail: String?

    package init(code: Int32, detail: String? = nil) {
        precondition(code != MDB_SUCCESS, "MDB_SUCCESS is not an error")
        self.code = code
        self.detail = detail
    }

    /// `mdb_strerror`'s text, which covers both LMDB codes and `errno` values, after the
    /// wrapper's own finding when there is one.
    package var description: String {
        (detail.map { $0 + ": " } ?? "") + String(cString: mdb_strerror(code)) + " (\(code))"
    }

    package static func == (lhs: LMDBError, rhs: LMDBError) -> Bool { lhs.code == rhs.code }
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// Whether the error means the data file is damaged: a page of the wrong type or past the
    /// end, a value of impossible size, a file cut short or keys out of order (the wrapper's
    /// `MDB_CORRUPTED`), or LMDB's fatal `MDB_PANIC`. Retrying cannot help; the data must be
    /// repaired or restored.
    package var meansDamage: Bool {
        [Self.corrupted, .pageNotFound, .badValueSize, .panic, .invalid, .versionMismatch].contains(self)
    }

    /// `MDB_KEYEXIST`: key/data pair already exists.
    package static let keyExists = LMDBError(code: MDB_KEYEXIST)
    /// `MDB_NOTFOUND`: no matching key. The wrapper turns it into `nil` wherever a miss is normal.
    package static let notFound = LMDBError(code: MDB_NOTFOUND)
    /// `MDB_CORRUPTED`: located page was wrong type.
    package static let corrupted = LMDBError(code: MDB_CORRUPTED)
    /// `MDB_PAGE_NOTFOUND`: requested page not found (a page number past the end: damage).
    package static let pageNotFound = LMDBError(code: MDB_PAGE_NOTFOUND)
    /// `MDB_PANIC`: update of meta page failed or environment had fatal error.
    package static let panic = LMDBError(code: MDB_PANIC)
    /// `MDB_VERSION_MISMATCH`: environment version mismatch.
    package static let versionMismatch = LMDBError(code: MDB_VERSION_MISMATCH)
    /// `MDB_INVALID`: file is not a valid LMDB file.
    package static let invalid = LMDBError(code: MDB_INVALID)
    /// `MDB_MAP_FULL`: environment map size reached.
    package static let mapFull = LMDBError(code: MDB_MAP_FULL)
    /// `MDB_DBS_FULL`: environment maxdbs reached.
    package static let dbsFull = LMDBError(code: MDB_DBS_FULL)
    /// `MDB_READERS_FULL`: environment maxreaders reached.
    package static let readersFull = LMDBError(code: MDB_READERS_FULL)
    /// `MDB_TXN_FULL`: transaction has too many dirty pages.
    package static let txnFull = LMDBError(code: MDB_TXN_FULL)
    /// `MDB_MAP_RESIZED`: another process grew the map beyond this process's size.
    package static let mapResized = LMDBError(code: MDB_MAP_RESIZED)
    /// `MDB_BAD_TXN`: transaction must abort, has a child, or is invalid.
    package static let badTransaction = LMDBError(code: MDB_BAD_TXN)
    /// `MDB_BAD_VALSIZE`: unsupported size of key/DB name/data, or wrong DUPFIXED size.
    package static let badValueSize = LMDBError(code: MDB_BAD_VALSIZE)
    /// `ENOSPC`: the file system is full.
    package static let noSpace = LMDBError(code: ENOSPC_CODE)
    /// `EIO`: an I/O error, which LMDB also returns for a write cut short by a full disk.
    package static let ioError = LMDBError(code: EIO_CODE)
    /// `EACCES`: permission denied.
    package static let accessDenied = LMDBError(code: EACCES_CODE)

    /// Lets `catch LMDBError.mapFull` match by code.
    package static func ~= (pattern: LMDBError, error: any Error) -> Bool {
        (error as? LMDBError)?.code == pattern.code
    }
}

#if canImport(Glibc)
import Glibc
private let ENOSPC_CODE = Int32(Glibc.ENOSPC)
private let EACCES_CODE = Int32(Glibc.EACCES)
private let EIO_CODE = Int32(Glibc.EIO)
#else
import Darwin
private let ENOSPC_CODE = Int32(Darwin.ENOSPC)
private let EACCES_CODE = Int32(Darwin.EACCES)
private let EIO_CODE = Int32(Darwin.EIO)
#endif

/// The one place return codes of `mdb_*` calls are compared: every call goes through it.
/// - Throws: `LMDBError` carrying `rc` when `rc` is not `MDB_SUCCESS`.
@inline(__always)
package func check(_ rc: Int32) throws(LMDBError) {
    if rc != MDB_SUCCESS { throw LMDBError(code: rc) }
}
