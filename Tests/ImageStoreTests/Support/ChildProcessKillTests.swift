import Foundation
import ImageStoreTestSupport
import Testing

/// The harness's own promise: `Collecting.kill()` ends the child and everything it started.
/// A crashing Swift child starts `swift-backtrace`, which inherits the child's stdout; one that
/// hung after a power-loss child's SIGBUS kept the collector waiting for EOF, and `.ci/run`
/// with it (2026-12-01).
@Suite struct ChildProcessKillTests {
    @Test func killEndsTheChildsOwnChildrenThatHoldItsOutputOpen() async throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let marker = directory + "/grandchild-finished"
            // The subshell outlives `sh` unless it is killed too, and holds the output pipe open.
            let child = try ChildProcess.Collecting("/bin/sh", ["-c", "(sleep 5; touch '\(marker)') & echo ready; wait"])
            #expect(child.wait(for: "ready"))
            #expect(child.kill().contains("ready"))
            try await Task.sleep(for: .seconds(6))  // long enough for a surviving subshell to leave its marker
            #expect(!FileManager.default.fileExists(atPath: marker), "kill() left the child's subshell running")
        }
    }

    @Test func aChildThatExitsByItselfTakesItsGroupWithIt() async throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let marker = directory + "/grandchild-finished"
            let child = try ChildProcess.Collecting("/bin/sh", ["-c", "(sleep 5; touch '\(marker)') & echo ready"])
            #expect(child.waitForExit() == 0)
            #expect(child.kill().contains("ready"))
            try await Task.sleep(for: .seconds(6))
            #expect(!FileManager.default.fileExists(atPath: marker), "the exited child's subshell kept running")
        }
    }
}
