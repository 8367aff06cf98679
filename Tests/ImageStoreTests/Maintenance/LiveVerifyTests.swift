import Foundation
import ImageStore
import ImageStoreTestSupport
import Locking
import Testing

/// `verify` on a store that is being written tells the truth: checkpoints retiring segments,
/// the open segment being appended and segments vanishing between listing and reading are never
/// reported as damage (issue 13 §3), whoever writes, this process or another.
@Suite struct LiveVerifyTests {
    /// Verifies per test: the false alarm this guards against came 0 to 2 times in 300 before the fix.
    static let rounds = 500

    /// Small segments, so the writers roll and checkpoint many times during the verifies.
    private func configuration(readOnly: Bool = false) -> ImageStore.Configuration {
        var configuration = makeConfiguration()
        configuration.readOnly = readOnly
        configuration.durability = .batched(within: .milliseconds(2))
        configuration.logSegmentBytes = 16 << 10
        return configuration
    }

    /// Runs `verify` `rounds` times; returns every problem reported and the entries checked.
    private func verifyRepeatedly(_ store: ImageStore) throws -> (problems: [String], checked: Int) {
        var problems: [String] = []
        var checked = 0
        for _ in 0..<Self.rounds {
            let report = try store.verify()
            problems += report.problems.map(\.description)
            checked += report.entriesChecked
        }
        return (problems, checked)
    }

    @Test func verifyNeverReportsDamageWhileThisProcessWrites() throws {
        try withTemporaryDirectory { directory in
            let store = try ImageStore(path: directory + "/store", configuration: configuration())
            defer { store.close() }
            let stop = LockedValue(false)
            let written = LockedValue(0)
            let writers = startThreads(3) { thread in
                var n = thread * 1_000
                while !stop.withLock({ $0 }) {
                    let bytes = Data(repeating: UInt8(truncatingIfNeeded: n), count: 2_000 + (n % 7) * 1_000)
                    if (try? store.put(bytes, for: "https://x.test/live/\(n % 40)")) != nil { written.withLock { $0 += 1 } }
                    n += 1
                }
            }
            let result = Result { try verifyRepeatedly(store) }
            stop.withLock { $0 = true }
            writers.wait()
            let (problems, checked) = try result.get()
            #expect(problems == [], "\(problems.count) problems in \(Self.rounds) verifies: \(problems.prefix(3))")
            #expect(checked > 0)
            #expect(written.withLock { $0 } > 100, "the writers wrote while verify ran")
            #expect(store.logStatus.map { $0.openSegment > 3 } == true, "segments rolled and were checkpointed meanwhile")
        }
    }

    @Test func readOnlyVerifyNeverReportsDamageWhileAnotherProcessWrites() throws {
        try withTemporaryDirectory { directory in
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["churn", directory, "2", "batched", "40"])
            defer { _ = writer.kill() }
            try #require(writer.wait(for: "ready"))
            let store = try ImageStore(path: directory, configuration: configuration(readOnly: true))
            defer { store.close() }
            let segmentsBefore = try logSegmentNumbers(directory)
            let (problems, checked) = try verifyRepeatedly(store)
            #expect(problems == [], "\(problems.count) problems in \(Self.rounds) verifies: \(problems.prefix(3))")
            #expect(checked > 0)
            let segmentsAfter = try logSegmentNumbers(directory)
            #expect((segmentsAfter.max() ?? 0) > (segmentsBefore.max() ?? 0) + 3, "the writer rolled segments meanwhile: \(segmentsBefore) then \(segmentsAfter)")
        }
    }

    /// The admin tool as ops run it against a live service: the release binary in CI
    /// (`IMGSTORE_ADMIN_BINARY`). Exit 4 here was the false alarm.
    @Test func adminVerifyExitsZeroWhileAnotherProcessWrites() throws {
        try withTemporaryDirectory { directory in
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["churn", directory, "2", "batched", "40"])
            defer { _ = writer.kill() }
            try #require(writer.wait(for: "ready"))
            var failures: [String] = []
            for _ in 0..<60 {
                let run = try ChildProcess.run(AdminRun.binary, ["--store", directory, "verify"])
                if run.status != 0 { failures.append("exit \(run.status): \(run.output)\(run.standardError)") }
            }
            #expect(failures == [], "\(failures.count) of 60 runs: \(failures.prefix(3))")
        }
    }

    /// A read-only open (what `imgstore-admin verify` does first) while another process grows
    /// the file: the open's check of the file's length against the pages in use must never see a
    /// growing file as cut short (seen once as `corruptStore` under ThreadSanitizer).
    @Test func readOnlyOpensNeverTakeAGrowingFileForACutOne() throws {
        try withTemporaryDirectory { directory in
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["put-forever", directory, "2", "none", "5"])
            defer { _ = writer.kill() }
            try #require(writer.wait(for: "acked"))
            var failures: [String] = []
            for _ in 0..<Self.rounds {
                do {
                    let store = try ImageStore(path: directory, configuration: configuration(readOnly: true))
                    store.close()
                } catch {
                    failures.append("\(error)")
                }
            }
            #expect(failures == [], "\(failures.count) of \(Self.rounds) opens: \(failures.prefix(2))")
        }
    }

    private func logSegmentNumbers(_ directory: String) throws -> [Int] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasPrefix("wal-0") }.compactMap { Int($0.dropFirst(4).dropLast(4)) }
    }
}
