import Foundation
import Locking
#if canImport(Glibc)
import Glibc
#endif

/// What a finished process left behind.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var standardOutput: Data
    public var standardError: String
    public var output: String { String(decoding: standardOutput, as: UTF8.self) }
}

/// Runs the project's built executables and other programs as real processes, through
/// `posix_spawn` directly.
///
/// Not `Foundation.Process`: on Linux with Swift 6.3.1 its `run()` intermittently crashes with
/// a buffer over-read while listing `/proc/self/fd` (swift-corelibs-foundation PR #5472), which
/// took down about one test run in five here.
public enum ChildProcess {
    /// The directory holding the built products (the test bundle's own directory).
    public static var productsDirectory: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        while directory.pathExtension == "xctest" || directory.lastPathComponent == "Contents" || directory.lastPathComponent == "MacOS" {
            directory.deleteLastPathComponent()
        }
        return directory.path
    }

    /// The path of a built executable product such as `imgstore-admin`.
    public static func product(_ name: String) -> String { productsDirectory + "/" + name }

    /// Runs `executable` with `arguments` to completion, feeding `input` on stdin.
    /// `environment` replaces the whole environment when given.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           input: Data? = nil, currentDirectory: String? = nil) throws -> ProcessResult {
        let stdin = try Pipe2(), stdout = try Pipe2(), stderr = try Pipe2()
        let pid = try spawn(executable, arguments, environment: environment, currentDirectory: currentDirectory,
                            stdin: stdin.read, stdout: stdout.write, stderr: stderr.write)
        stdin.closeRead(); stdout.closeWrite(); stderr.closeWrite()
        let errorData = ByteBuffer()
        let done = DispatchSemaphore(value: 0)
        let errorFD = stderr.read
        Thread.detachNewThread {
            errorData.append(readAll(errorFD))
            done.signal()
        }
        if let input { input.withUnsafeBytes { writeAll(stdin.write, $0) } }
        stdin.closeWrite()
        let output = readAll(stdout.read)
        done.wait()
        stdout.closeRead(); stderr.closeRead()
        return ProcessResult(status: waitForExit(pid), standardOutput: output, standardError: String(decoding: errorData.data, as: UTF8.self))
    }

    /// A child whose standard output is collected in the background while it runs.
    public final class Collecting: Sendable {
        public let processIdentifier: pid_t
        private let output = ByteBuffer()
        private let finished = DispatchSemaphore(value: 0)
        private let exit = LockedValue<Int32?>(nil)
        /// The write end of the child's stdin, when it was started `withInput`.
        private let input: Pipe2?

        /// Starts `executable`; `withInput` gives it a pipe as stdin (see `send`), else /dev/null.
        public init(_ executable: String, _ arguments: [String], withInput: Bool = false) throws {
            let pipe = try Pipe2()
            input = withInput ? try Pipe2() : nil
            // The child's stderr goes to the test's, so a child that fails says why in the log.
            // Its own process group, so `kill` also ends what it started (see `kill`).
            processIdentifier = try spawn(executable, arguments, environment: nil, currentDirectory: nil,
                                          stdin: input?.read, stdout: pipe.write, stderr: 2, ownProcessGroup: true)
            input?.closeRead()
            pipe.closeWrite()
            let fd = pipe.takeRead()  // the reader thread owns and closes it
            Thread.detachNewThread { [output, finished] in
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    output.append(Data(buffer[0..<n]))
                }
                Glibc.close(fd)
                finished.signal()
            }
        }

        /// Writes `text` to the child's stdin (started `withInput`); `close` ends its input.
        public func send(_ text: String, close: Bool = false) {
            guard let input else { preconditionFailure("the child was started without input") }
            Data(text.utf8).withUnsafeBytes { writeAll(input.write, $0) }
            if close { input.closeWrite() }
        }

        /// Waits for the child to exit by itself; returns its status (nil after `timeout`).
        public func waitForExit(timeout: TimeInterval = 60) -> Int32? {
            _ = wait(timeout: timeout) { _ in !isRunning }
            return exit.withLock { $0 }
        }

        /// Everything printed so far.
        public var text: String { String(decoding: output.data, as: UTF8.self) }

        /// Whether the child has not exited yet (reaps it when it has).
        public var isRunning: Bool {
            exit.withLock { status in
                if status != nil { return false }
                // Seen exited without reaping it first: its group is ended while the pid is still
                // reserved by the zombie, so `kill(-pid)` cannot reach a newer process given that pid.
                var info = siginfo_t()
                guard waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOHANG | WNOWAIT) == 0,
                      info._sifields._sigchld.si_pid == processIdentifier else { return true }
                Glibc.kill(-processIdentifier, SIGKILL)
                status = ChildProcess.waitForExit(processIdentifier)
                return false
            }
        }

        /// The exit status (128 + the signal when killed by one) once the child has exited, else nil.
        public var exitStatus: Int32? {
            _ = isRunning
            return exit.withLock { $0 }
        }

        /// Waits until the output contains `line` (or the child exits). Returns whether it did.
        public func wait(for line: String, timeout: TimeInterval = 60) -> Bool {
            wait(timeout: timeout) { $0.contains(line) }
        }

        /// Waits until `done` holds for the output so far (or the child exits), looking every
        /// `pollMicroseconds`. Returns whether it did.
        public func wait(timeout: TimeInterval = 60, pollMicroseconds: UInt32 = 2000, until done: (String) -> Bool) -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while Date() < deadline {
                if done(text) { return true }
                if !isRunning { usleep(20_000); return done(text) }
                usleep(pollMicroseconds)
            }
            return false
        }

        /// SIGKILLs the child (if still running) and every process of its group, and returns
        /// all it printed.
        ///
        /// The whole group: a process the child started may hold the output pipe open, and the
        /// output ends only when the last holder is gone. One such holder is `swift-backtrace`,
        /// which the Swift runtime starts in a crashing child. (A child that exits by itself
        /// has its group ended when it is reaped, in `isRunning`.)
        @discardableResult
        public func kill() -> String {
            exit.withLock { status in
                // An exited child's group was ended when it was reaped (`isRunning`).
                guard status == nil else { return }
                // The group's id is the child's pid (`ownProcessGroup`), reserved until it is reaped.
                Glibc.kill(-processIdentifier, SIGKILL)
                status = ChildProcess.waitForExit(processIdentifier)
            }
            finished.wait()
            finished.signal()  // later calls return at once
            return text
        }
    }

    // MARK: - posix_spawn

    /// Spawns `executable`; the given descriptors become the child's stdin/stdout/stderr
    /// (nil: /dev/null for stdin and stderr, inherited stdout). Every other descriptor is closed
    /// in the child by the kernel's close-on-exec (Foundation's and ours all set it).
    static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]?,
                      currentDirectory: String?, stdin: Int32?, stdout: Int32?, stderr: Int32?,
                      ownProcessGroup: Bool = false) throws -> pid_t {
        var argv = [executable] + arguments
        var path = executable
        if let currentDirectory {
            // `env --chdir` changes directory in the child without a glibc extension.
            argv = ["/usr/bin/env", "--chdir=" + currentDirectory] + argv
            path = "/usr/bin/env"
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdin { posix_spawn_file_actions_adddup2(&actions, stdin, 0) } else { posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) }
        if let stdout { posix_spawn_file_actions_adddup2(&actions, stdout, 1) }
        if let stderr { posix_spawn_file_actions_adddup2(&actions, stderr, 2) } else { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
        let environmentStrings = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        // The child starts with no signal blocked and every signal at its default action: the
        // spawning thread may be a Dispatch worker, which blocks signals, and a child that
        // inherits that mask ignores SIGTERM.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        var flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF
        if ownProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)  // a new group whose id is the child's pid
            flags |= POSIX_SPAWN_SETPGROUP
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        var pid: pid_t = 0
        let rc = spawnLock.withLock { () -> Int32 in
            withCStrings(argv) { argvPointers in
                withCStrings(environmentStrings) { envPointers in
                    posix_spawn(&pid, path, &actions, &attributes, argvPointers, envPointers)
                }
            }
        }
        guard rc == 0 else { throw SpawnError(message: "posix_spawn \(path): \(String(cString: strerror(rc)))") }
        return pid
    }

    /// Waits for `pid` and returns its exit status (128 + the signal when killed by one).
    static func waitForExit(_ pid: pid_t) -> Int32 {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        return exitStatus(raw)
    }

    /// A `waitpid` status as an exit status (128 + the signal when killed by one).
    static func exitStatus(_ raw: Int32) -> Int32 {
        let signal = raw & 0x7F
        return signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
    }

    /// Pipes are made close-on-exec (so other children do not inherit them and keep their
    /// readers from seeing end-of-file) under this lock, which `spawn` also holds.
    static let spawnLock = LockedValue(())

    public struct SpawnError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }
}

/// A pipe whose ends are close-on-exec in this process (the child gets them through dup2).
private final class Pipe2: Sendable {
    let read: Int32
    let write: Int32
    private let closed = LockedValue<(read: Bool, write: Bool)>((false, false))

    init() throws {
        var fds: [Int32] = [0, 0]
        let created = ChildProcess.spawnLock.withLock { () -> Bool in
            guard pipe(&fds) == 0 else { return false }
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
            return true
        }
        guard created else { throw ChildProcess.SpawnError(message: "pipe: \(String(cString: strerror(errno)))") }
        read = fds[0]
        write = fds[1]
    }

    func closeRead() { closed.withLock { if !$0.read { Glibc.close(read); $0.read = true } } }
    /// Hands the read end to the caller, who closes it.
    func takeRead() -> Int32 { closed.withLock { $0.read = true }; return read }
    func closeWrite() { closed.withLock { if !$0.write { Glibc.close(write); $0.write = true } } }
    deinit { closeRead(); closeWrite() }
}

/// Bytes appended by one thread and read by others.
private final class ByteBuffer: Sendable {
    private let bytes = LockedValue(Data())
    func append(_ data: Data) { bytes.withLock { $0.append(data) } }
    var data: Data { bytes.withLock { $0 } }
}

private func readAll(_ fd: Int32) -> Data {
    var result = Data()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return result }
        result.append(contentsOf: buffer[0..<n])
    }
}

private func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) {
    var offset = 0
    while offset < bytes.count {
        let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { return }
        offset += n
    }
}

/// Calls `body` with a NULL-terminated array of C strings.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> R) -> R {
    var pointers = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for pointer in pointers { free(pointer) } }
    return body(pointers)
}
