import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Runs `imgstore-admin` as a real process, so a signal (SIGBUS, SIGSEGV) or a hang is seen as
/// what it is. `IMGSTORE_ADMIN_BINARY` names another binary (the release build) to test instead.
enum AdminRun {
    static var binary: String { adminBinaryPath }

    /// What one command did: its exit status (128 + signal when killed by one; nil when it
    /// was still running after the bound and was killed) and its standard output.
    struct Outcome: CustomStringConvertible {
        var arguments: [String]
        var status: Int32?
        var output: String
        var description: String { "imgstore-admin \(arguments.joined(separator: " ")) -> \(status.map(String.init) ?? "hung")" }
    }

    /// Runs `imgstore-admin --store STORE ARGUMENTS…`, killing it when it runs longer than
    /// `bound` seconds (a hang, never a slow run: every command here takes well under a second).
    static func run(_ store: String, _ arguments: [String], bound: TimeInterval = 30) throws -> Outcome {
        let child = try ChildProcess.Collecting(binary, ["--store", store] + arguments)
        let status = child.waitForExit(timeout: bound)
        let output = child.kill()
        return Outcome(arguments: arguments, status: status, output: output)
    }

    /// Creates a store of `count` entries at `path` in a child process (`imgstore-test-child
    /// make`): entry n is `https://damage.test/images/N.bin`, sized from 200 bytes (inside a leaf
    /// page) to 20 KB (overflow pages), so every database gets branch and leaf pages.
    static func makeStore(at path: String, count: Int = 400, seed: UInt64 = 1) throws {
        let made = try ChildProcess.run(ChildProcess.product("imgstore-test-child"), ["make", path, "\(count)", "\(seed)"])
        try #require(made.status == 0, "make: \(made.standardError)")
    }

    /// Reads every entry `makeStore` wrote in a child process; returns what became of each.
    static func readEach(_ path: String, count: Int = 400, seed: UInt64 = 1) throws -> (status: Int32?, results: [Int: String]) {
        let child = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["read-each", path, "\(count)", "\(seed)"])
        let status = child.waitForExit(timeout: 60)
        var results: [Int: String] = [:]
        for line in child.kill().split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2, let n = Int(parts[0]) { results[n] = String(parts[1]) }
        }
        return (status, results)
    }
}
