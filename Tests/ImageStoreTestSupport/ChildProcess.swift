import Foundation
import Locking
import Synchronization

/// What a finished process left behind.
public struct ProcessResult: Sendable {
    public var status: Int32
    public var standardOutput: Data
    public var standardError: String
    public var output: String { String(decoding: standardOutput, as: UTF8.self) }
}

/// Runs the project's built executables and other programs as real processes.
public enum ChildProcess {
    /// Starts `process`, one launch at a time in this test process: Foundation's `Process.run`
    /// on Linux is not safe to call from several threads at once (seen here as a crash in
    /// its argument copying while parallel tests launched children).
    public static func launch(_ process: Process) throws {
        try launchLock.withLock { try process.run() }
    }

    private static let launchLock = NSLock()

    /// The directory holding the built products (the test bundle's own directory).
    public static var productsDirectory: String {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        var directory = URL(fileURLWithPath: executable).deletingLastPathComponent()
        // The test runner may live inside a `.xctest` bundle directory.
        while directory.pathExtension == "xctest" || directory.lastPathComponent == "Contents" || directory.lastPathComponent == "MacOS" {
            directory.deleteLastPathComponent()
        }
        return directory.path
    }

    /// The path of a built executable product such as `imgstore-admin`.
    public static func product(_ name: String) -> String { productsDirectory + "/" + name }

    /// Runs `executable` with `arguments` to completion, feeding `input` on stdin.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           input: Data? = nil, currentDirectory: String? = nil) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = URL(fileURLWithPath: currentDirectory) }
        let stdout = Pipe(), stderr = Pipe(), stdin = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = stdin
        try ChildProcess.launch(process)
        if let input { stdin.fileHandleForWriting.write(input) }
        try stdin.fileHandleForWriting.close()
        // Read both pipes to the end before waiting, so a chatty child cannot block on a full pipe.
        let errorData = LockedValue(Data())
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            let data = stderr.fileHandleForReading.readDataToEndOfFile()
            errorData.withLock { $0 = data }
            group.leave()
        }
        let outputData = stdout.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return ProcessResult(status: process.terminationStatus, standardOutput: outputData,
                             standardError: String(decoding: errorData.withLock { $0 }, as: UTF8.self))
    }

    /// Starts `executable` and returns once it has printed `readyLine` on stdout; the caller
    /// kills it. Fails if it exits first.
    public static func start(_ executable: String, _ arguments: [String], readyLine: String = "ready") throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let stdout = Pipe()
        process.standardOutput = stdout
        try ChildProcess.launch(process)
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains(readyLine) {
            let chunk = stdout.fileHandleForReading.availableData
            if chunk.isEmpty { throw ChildError.exitedBeforeReady(String(decoding: seen, as: UTF8.self)) }
            seen.append(chunk)
        }
        return process
    }

    /// A child whose standard output is collected in the background while it runs.
    public final class Collecting: Sendable {
        public let process: Process
        private final class Buffer: Sendable { let data = LockedValue(Data()) }
        private let output = Buffer()
        private let finished = DispatchGroup()

        public init(_ executable: String, _ arguments: [String]) throws {
            process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            try ChildProcess.launch(process)
            finished.enter()
            let reader = pipe.fileHandleForReading
            Thread.detachNewThread { [output, finished] in
                while true {
                    let chunk = reader.availableData
                    if chunk.isEmpty { break }
                    output.data.withLock { $0.append(chunk) }
                }
                finished.leave()
            }
        }

        /// Everything printed so far.
        public var text: String { String(decoding: output.data.withLock { $0 }, as: UTF8.self) }

        /// Waits until the output contains `line` (or the child exits). Returns whether it did.
        public func wait(for line: String, timeout: TimeInterval = 60) -> Bool {
            let deadline = Date(timeIntervalSinceNow: timeout)
            while Date() < deadline {
                if text.contains(line) { return true }
                if !process.isRunning { return text.contains(line) }
                usleep(2000)
            }
            return false
        }

        /// SIGKILLs the child and returns all it printed.
        public func kill() -> String {
            ChildProcess.kill(process)
            finished.wait()
            return text
        }
    }

    /// Sends SIGKILL and waits for the process to be gone.
    public static func kill(_ process: Process) {
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    public enum ChildError: Error { case exitedBeforeReady(String) }
}
