import Foundation
import ImageStoreTestSupport

/// Runs the tool into a pipe whose reader has gone, as `| head -1` leaves it once it has read
/// enough: the right-hand side closes its end, then lets the left start, so the first write
/// already finds no reader (no race with the pipe's buffer).
enum GonePipeReader {
    /// Runs `command` (a shell command line using `$ADMIN` and `$1`… for `arguments`) with
    /// SIGPIPE ignored (systemd's default) or at its default action; the command's exit status
    /// is the last line of the result's stderr, `status=N`.
    static func run(_ command: String, _ arguments: [String], ignoringSIGPIPE: Bool) throws -> ProcessResult {
        try withTemporaryDirectory { directory throws in
            // A UUID path: safe inside single quotes.
            let go = "'\(directory)/go'"
            let script = """
                \(ignoringSIGPIPE ? "trap '' PIPE" : "trap - PIPE")
                mkfifo \(go)
                { read line < \(go); \(ignoringSIGPIPE ? "" : "env --default-signal=PIPE ")\(command); echo "status=$?" >&2; } | { exec 0<&-; echo go > \(go); }
                """
            return try AdminBinary.shell(script, arguments)
        }
    }
}
