import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A writer stopped inside an LMDB write transaction (`kill -STOP`, a debugger, a frozen VM)
/// must not hang anyone else: another writer is told at once who holds the store, and readers
/// never wait for it.
@Suite(.serialized) struct StalledWriterTests {
    @Test func aStoppedWriterInsideATransactionHangsNoOtherCommand() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store"
            try AdminRun.makeStore(at: path, count: 20)
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["stall-in-write", path])
            defer { writer.kill() }
            try #require(writer.wait(for: "ready"))
            #expect(kill(writer.processIdentifier, SIGSTOP) == 0)
            defer { kill(writer.processIdentifier, SIGCONT) }

            let writes: [[String]] = [
                ["put", "https://damage.test/new.png", Fixtures.directory + "/shapes.png"],
                ["rm", "https://damage.test/images/2.bin"], ["expire"], ["compact"],
            ]
            for arguments in writes {
                let outcome = try AdminRun.run(path, arguments)
                #expect(outcome.status == 74, "\(outcome)")
            }
            let reads: [[String]] = [["get", "https://damage.test/images/1.bin"], ["ls"], ["stats"], ["verify"]]
            for arguments in reads {
                let outcome = try AdminRun.run(path, arguments)
                #expect(outcome.status == 0, "\(outcome)")
            }
            let repair = try AdminRun.run(path, ["verify", "--repair"])
            #expect(repair.status == 8, "\(repair)")
        }
    }

    @Test func aSecondWriterGetsWriterLockedNamingThePidAndAReadOnlyOpenReads() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store"
            try AdminRun.makeStore(at: path, count: 20)
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["stall-in-write", path])
            defer { writer.kill() }
            try #require(writer.wait(for: "ready"))
            #expect(kill(writer.processIdentifier, SIGSTOP) == 0)
            defer { kill(writer.processIdentifier, SIGCONT) }
            // In a child, bounded, so a hang fails the test instead of stopping the run.
            let second = try AdminRun.run(path, ["put", "https://damage.test/new.png", Fixtures.directory + "/shapes.png"])
            #expect(second.status == 74)
            var configuration = makeConfiguration()
            configuration.readOnly = true
            let store = try ImageStore(path: path, configuration: configuration)
            defer { store.close() }
            #expect(try store.get("https://damage.test/images/3.bin", allowingStale: true) != nil)
            #expect(try store.entries().count == 20)
            let opener = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["try-writer", path])
            let status = opener.waitForExit(timeout: 30)
            let said = opener.kill()
            #expect(status == 0, "the second writer's open returned (\(status.map(String.init) ?? "hung"))")
            #expect(said.contains("writerLocked") && said.contains("pid \(writer.processIdentifier)"), "\(said)")
        }
    }
}
