/// The tool's exit statuses (sysexits.h values where one fits), as documented in `--help`
/// and the README.
enum ExitCode: Int32 {
    /// Success.
    case success = 0
    /// The entry asked for does not exist (`get`, `rm`), or a file is invalid (`validate`).
    case notFound = 1
    /// The command line is wrong (EX_USAGE).
    case usage = 64
    /// The input data is bad: not an image, too large, a malformed URL (EX_DATAERR).
    case dataError = 65
    /// An I/O or storage error: cannot open, disk full, corrupt store (EX_IOERR).
    case ioError = 74
}

/// A failure that ends the command with `code`, after printing `message` as one line on stderr.
struct CommandFailure: Error {
    var code: ExitCode
    var message: String
}
