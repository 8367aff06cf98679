import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Compaction next to other processes: it refuses while any other process has the store open
/// (idle, reading, or read-only), and read-only openers racing with it never read the file it
/// replaced. All with real processes (`imgstore-test-child`).
@Suite struct CompactionProcessTests {
    private static let child = ChildProcess.product("imgstore-test-child")
    private static let count = 40

    /// A closed store holding the child's entries 0..<count (`put`), 90 % of some other
    /// entries removed first so there is something to compact.
    private func makeStore(_ directory: String) throws {
        let writer = try ChildProcess.Collecting(Self.child, ["put", directory, String(Self.count), "sync"])
        #expect(writer.wait(for: "ready"))
        writer.kill()
        let store = try ImageStore(path: directory, configuration: makeConfiguration())
        for n in 0..<200 { try store.put(Data(repeating: UInt8(n & 0xFF), count: 10_000), for: "https://x.test/filler/\(n)") }
        for n in 0..<200 { try store.remove("https://x.test/filler/\(n)") }
        store.close()
    }

    private func isRefusal(_ error: any Error, naming pid: pid_t? = nil) -> Bool {
        guard case let .storage(_, detail) = error as? ImageStoreError, detail.contains("has the store open") else { return false }
        return pid.map { detail.contains("process \($0) ") } ?? true
    }

    // MARK: - Refusal

    @Test(arguments: ["hold-open", "hold-read-only", "hold-reader"])
    func anotherProcessWithTheStoreOpenMakesCompactionRefuse(action: String) throws {
        try withTemporaryDirectory { directory throws in
            try makeStore(directory)
            let before = try Data(contentsOf: URL(fileURLWithPath: directory + "/data.mdb"))
            let other = try ChildProcess.Collecting(Self.child, [action, directory])
            defer { other.kill() }
            #expect(other.wait(for: "ready"))
            #expect { try ImageStore.compact(path: directory) } throws: { isRefusal($0, naming: other.processIdentifier) }
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/data.mdb")) == before, "nothing was swapped in")
            // The same holds for a store this process keeps open.
            let store = try ImageStore(path: directory, configuration: makeConfiguration())
            #expect { try store.compact() } throws: { isRefusal($0, naming: other.processIdentifier) }
            other.kill()
            let report = try store.compact()
            #expect(report.bytesAfter < report.bytesBefore, "alone again, it compacts: \(report)")
            #expect(try store.verify().problems == [])
            #expect(try store.statistics().entryCount == Self.count)
            store.close()
        }
    }

    /// A process that opened and closed the store must not keep it open: a retain cycle in
    /// the write path kept the LMDB environment alive after `close`, so every compaction by
    /// another process was refused.
    @Test func aStoreClosedByThisProcessCanBeCompactedByAnother() throws {
        try withTemporaryDirectory { directory throws in
            try makeStore(directory)
            do {
                let store = try ImageStore(path: directory, configuration: makeConfiguration())
                try store.put(Data([1, 2, 3]), for: "https://x.test/extra")
                store.close()
            }
            let result = try ChildProcess.run(ChildProcess.product("imgstore-admin"), ["--store", directory, "compact"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.output.hasPrefix("shrank data.mdb from "), "\(result.output)")
        }
    }

    // MARK: - Racing openers

    /// A child opens the store read-only, checks every entry and closes it, again and again,
    /// while this process compacts it: each compaction either is refused (the child has it
    /// open) or swaps the file while the child has it closed, and the child never reads a
    /// wrong entry or fails.
    @Test func readOnlyOpenersRacingWithCompactionNeverReadAReplacedFile() throws {
        try withTemporaryDirectory { directory throws in
            try makeStore(directory)
            let store = try ImageStore(path: directory, configuration: makeConfiguration())
            defer { store.close() }
            let reader = try ChildProcess.Collecting(Self.child, ["read-loop", directory, String(Self.count)])
            defer { reader.kill() }
            #expect(reader.wait(for: "round 0"))
            var compacted = 0
            var refused = 0
            // Bounded by time, not attempts: under load (ThreadSanitizer, a busy machine) an attempt
            // can take longer than the child's closed moment, and most attempts are refused.
            let deadline = Date().addingTimeInterval(240)
            while compacted < 10 && reader.isRunning && Date() < deadline {
                do {
                    _ = try store.compact()
                    compacted += 1
                    usleep(100_000)  // the next compaction races the child's next round, not this one
                } catch {
                    guard isRefusal(error) else { throw error }
                    refused += 1
                    usleep(1000)  // pacing only: the outcome is counted, not timed
                }
            }
            let rounds = reader.text.components(separatedBy: "round ").count - 1
            #expect(reader.isRunning, "the reader failed: \(reader.text.suffix(200))")
            reader.kill()
            #expect(!reader.text.contains("bad"), "\(reader.text.suffix(200))")
            // Some compactions must have swapped the file while the child ran, or nothing was raced.
            #expect(compacted >= 3, "compactions that swapped the file: \(compacted), refused: \(refused)")
            #expect(rounds > 1)
            print("CompactionProcessTests: \(compacted) compactions, \(refused) refused, \(rounds) reader rounds")
            #expect(try store.verify().problems == [])
            #expect(try store.statistics().entryCount == Self.count)
        }
    }
}
