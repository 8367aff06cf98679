/// The tool's exit statuses, as documented in `--help` and the README: sysexits.h values for
/// most commands, and fsck's for `verify`, which scripts treat the way they treat `fsck`.
struct ExitCode: RawRepresentable, Hashable {
    var rawValue: Int32

    /// Success.
    static let success = ExitCode(rawValue: 0)
    /// The entry asked for does not exist (`get`, `rm`), or a file is invalid (`validate`).
    static let notFound = ExitCode(rawValue: 1)
    /// The command line is wrong (EX_USAGE).
    static let usage = ExitCode(rawValue: 64)
    /// The store named by `--store` does not exist (EX_NOINPUT); nothing was created.
    static let noInput = ExitCode(rawValue: 66)
    /// The input data is bad: not an image, too large, a malformed URL (EX_DATAERR).
    static let dataError = ExitCode(rawValue: 65)
    /// An I/O or storage error: cannot open, disk full, corrupt store (EX_IOERR).
    static let ioError = ExitCode(rawValue: 74)
    /// The shared tier is unavailable: unreachable, timed out, failing (5xx), no such bucket,
    /// or answering what S3 does not (EX_UNAVAILABLE).
    static let unavailable = ExitCode(rawValue: 69)
    /// The shared tier refused the credentials (EX_NOPERM).
    static let noPermission = ExitCode(rawValue: 77)

    // MARK: verify (as fsck)
    /// Problems were found and all of them repaired: the store is consistent again (fsck's
    /// "errors corrected"), also after a salvage that lost the entries on damaged pages.
    static let verifyRepaired = ExitCode(rawValue: 1)
    /// Problems were found and some are left.
    static let verifyProblemsLeft = ExitCode(rawValue: 4)
    /// The check could not run: cannot open, I/O error.
    static let verifyOperationalError = ExitCode(rawValue: 8)
    /// The command line is wrong.
    static let verifyUsage = ExitCode(rawValue: 16)
}

/// A failure that ends the command with `code`, after printing `message` as one line on stderr
/// (nothing when `message` is empty: the command has already said everything on stdout).
struct CommandFailure: Error {
    var code: ExitCode
    var message: String
}
