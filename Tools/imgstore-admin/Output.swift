import Foundation
import ImageStore
import Synchronization

/// The tool's one path to its standard streams: `write(2)` on descriptors 1 and 2, never
/// `FileHandle` (whose `write` traps on an error inside Foundation).
///
/// The first failure to write standard output is kept, later output is dropped, and the
/// command runs to its end (so nothing it changes is left half done); `main` then ends the tool
/// with `exitStatus(for:)`: a reader that went away (`EPIPE`, as with `| head -1` when SIGPIPE
/// is ignored) is a quiet success, any other failure one stderr line and status 74 (`verify`
/// reports a lost report itself, with fsck's statuses: see `writeError`). Failures to write
/// standard error are ignored: there is nowhere left to report them.
enum Output {
    /// Why standard output could not be written.
    enum Failure: Equatable {
        /// The reader closed the pipe (`EPIPE`).
        case readerGone
        /// Any other error, as the system describes it.
        case error(String)
    }

    private struct State {
        var failure: Failure?
        /// The descriptors among 0–2 that were closed when the tool started (now `/dev/null`).
        var closedAtStart: Set<Int32> = []
    }

    private static let state = Mutex(State())

    /// Points closed descriptors 0–2 at `/dev/null`, before anything opens a file, so no file
    /// the tool opens can become its standard output. Remembers whether standard output was
    /// closed: writing to it is then reported (as `ls >&-` is by other tools), not silently lost.
    static func prepareStandardDescriptors() {
        let closed = Set((0...2).filter { fcntl($0, F_GETFD) < 0 })
        state.withLock { $0.closedAtStart = closed }
        // Without /dev/null ImageStore.init refuses to open a store while 0-2 are closed.
        _ = try? StandardDescriptors.reserve(path: "/dev/null")
    }

    /// Whether `descriptor` (0, 1 or 2) was closed when the tool started: writing to it is an
    /// error to report, not output for the `/dev/null` now standing in for it.
    static func wasClosedAtStart(_ descriptor: Int32) -> Bool {
        state.withLock { $0.closedAtStart.contains(descriptor) }
    }

    /// The first failure to write standard output, if any.
    static var failure: Failure? { state.withLock { $0.failure } }

    /// Why standard output could not be written when that was an error (a full disk, a closed
    /// descriptor) rather than a reader that went away; nil otherwise. For a command whose
    /// status must also say what it found when its output is lost (`verify`).
    static var writeError: String? {
        if case let .error(reason)? = failure { return reason }
        return nil
    }

    static func standardOutput(_ text: String) { standardOutput(Data(text.utf8)) }

    static func standardOutput(_ data: Data) {
        data.withUnsafeBytes { standardOutput($0) }
    }

    /// Writes `bytes` whole to standard output, unless an earlier write failed.
    static func standardOutput(_ bytes: UnsafeRawBufferPointer) {
        state.withLock { state in
            guard state.failure == nil else { return }
            if state.closedAtStart.contains(1) {
                state.failure = .error("it is closed")
                return
            }
            if let code = writeAll(1, bytes) {
                state.failure = code == EPIPE ? .readerGone : .error(String(cString: strerror(code)))
            }
        }
    }

    static func standardError(_ text: String) {
        Data(text.utf8).withUnsafeBytes { _ = writeAll(2, $0) }
    }

    /// The most one `write(2)` is asked to take: large images go out in pieces of this size.
    static let chunkBytes = 1 << 20

    /// Writes all of `bytes` to `fd`, at most `chunkBytes` per call; returns the `errno` of a
    /// failed write, nil on success.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, min(bytes.count - offset, chunkBytes))
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += n
        }
        return nil
    }

    /// The status to end with once the command returned `code` (`prefix` names the tool and
    /// command for the stderr line): the command's own failure wins; else a failed standard
    /// output is 74, or a quiet 0 when its reader went away.
    static func exitStatus(for code: ExitCode, prefix: String) -> ExitCode {
        guard code == .success, let failure else { return code }
        switch failure {
        case .readerGone:
            return .success
        case let .error(reason):
            standardError("\(prefix): cannot write to standard output: \(reason)\n")
            return .ioError
        }
    }
}
