import Foundation
import ImageStoreTestSupport
import Testing

@Suite struct ValidateAndLogCommandTests {
    private let admin = AdminBinary.path

    // MARK: - validate

    @Test func validFilesExitZeroWithALinePerFile() throws {
        let files = ["gradient-rgb.png", "photo-progressive.jpg"].map { Fixtures.directory + "/" + $0 }
        let result = try ChildProcess.run(admin, ["validate"] + files)
        #expect(result.status == 0)
        #expect(result.output == "\(files[0]): ok, png 64x48\n\(files[1]): ok, jpeg 160x120\n")
    }

    @Test func anInvalidOrUnreadableFileExitsOneAndTheOthersAreStillChecked() throws {
        try withTemporaryDirectory { directory throws in
            let truncated = directory + "/cut.png"
            try Fixtures.image("gradient-rgb.png").prefix(500).write(to: URL(fileURLWithPath: truncated))
            let good = Fixtures.directory + "/shapes.png"
            let result = try ChildProcess.run(admin, ["validate", "--json", truncated, directory + "/missing.jpg", good])
            #expect(result.status == 1)
            let objects = try result.output.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            #expect(objects.count == 3)
            #expect(objects[0]["ok"] as? Bool == false)
            #expect(objects[0]["format"] as? String == "png")
            #expect((objects[0]["error"] as? String)?.isEmpty == false)
            #expect(objects[1]["ok"] as? Bool == false)
            #expect((objects[1]["error"] as? String)?.contains("no such file") == true)
            #expect(objects[2]["ok"] as? Bool == true)
            #expect(objects[2]["width"] as? Int == 100 && objects[2]["height"] as? Int == 30)
            #expect(objects[2]["error"] is NSNull)
        }
    }

    @Test func deepModeCatchesWhatOnlyADecoderSees() throws {
        let badAdler = Fixtures.corpusRoot + "/libpng-testpngs/crashers/badadler.png"
        #expect(try ChildProcess.run(admin, ["validate", badAdler]).status == 0)
        #expect(try ChildProcess.run(admin, ["validate", "--deep", badAdler]).status == 1)
    }

    @Test func validateWithoutFilesIsAUsageError() throws {
        #expect(try ChildProcess.run(admin, ["validate"]).status == 64)
    }

    // MARK: - wal and checkpoint

    @Test func checkpointReplaysALogLeftByACrashedWriter() throws {
        try withTemporaryDirectory { directory throws in
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["put", directory, "5", "sync", "keep-log"])
            #expect(writer.wait(for: "ready"))
            _ = writer.kill()
            let checkpoint = try ChildProcess.run(admin, ["--store", directory, "checkpoint"])
            #expect(checkpoint.status == 0, "\(checkpoint.standardError)")
            #expect(checkpoint.output == "checkpointed: 5 record(s) replayed from the log, 0 torn byte(s) dropped\n")
            let wal = try ChildProcess.run(admin, ["--store", directory, "wal", "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: wal.standardOutput) as? [String: Any])
            #expect(object["segments"] is [Any] && object["spareSegments"] is Int && object["bytes"] is Int, "\(wal.output)")
            let again = try ChildProcess.run(admin, ["--store", directory, "checkpoint"])
            #expect(again.output == "checkpointed: 0 record(s) replayed from the log, 0 torn byte(s) dropped\n", "nothing left to replay")
            let list = try ChildProcess.run(admin, ["--store", directory, "ls"])
            #expect(list.output.split(separator: "\n").count == 5)
        }
    }

    @Test func aLogCutShortBeforeAppliedSeqIsWarnedAboutOnStandardError() throws {
        try withTemporaryDirectory { directory throws in
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["put", directory, "5", "sync", "keep-log"])
            #expect(writer.wait(for: "ready"))
            _ = writer.kill()
            let name = "wal-00000000000000000001.log"
            let saved = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
            let first = try ChildProcess.run(admin, ["--store", directory, "checkpoint"])  // applied-seq 5, log retired
            #expect(first.status == 0 && first.standardError.isEmpty, "\(first.standardError)")
            // Put the segment back, cut after its first record: the log now ends before applied-seq.
            let firstRecordEnd = 32 + saved[8..<12].reversed().reduce(0) { $0 << 8 | Int($1) }
            try saved.prefix(firstRecordEnd).write(to: URL(fileURLWithPath: directory + "/" + name))
            let again = try ChildProcess.run(admin, ["--store", directory, "checkpoint"])
            #expect(again.status == 0)
            #expect(again.standardError.contains("imgstore-admin: warning: write-ahead log: the log ends at sequence 1, before LMDB's applied-seq 5"), "\(again.standardError)")
        }
    }

    /// A log damaged before acknowledged records: the writer commands refuse it and name the
    /// tool's way out, `verify --repair` (never the library's `salvageDamagedLog`), and after the
    /// repair the store takes writes again.
    @Test func aDamagedLogNamesVerifyRepairAndTheRepairOpensTheStoreAgain() throws {
        try withTemporaryDirectory { directory throws in
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["put", directory, "5", "sync", "keep-log"])
            #expect(writer.wait(for: "ready"))
            _ = writer.kill()
            // Flip a byte inside the first record's payload; four acknowledged records follow it.
            try FileCorruption.flipByte(at: 40, in: directory + "/wal-00000000000000000001.log")
            for command in [["checkpoint"], ["put", "https://x.test/new.png", Fixtures.directory + "/shapes.png"]] {
                let refused = try ChildProcess.run(admin, ["--store", directory] + command)
                #expect(refused.status == 74, "\(command): \(refused.standardError)")
                #expect(refused.standardError.contains("is damaged") && refused.standardError.contains("run imgstore-admin verify --repair"),
                        "\(command): \(refused.standardError)")
                #expect(!refused.standardError.contains("salvageDamagedLog") && !refused.standardError.contains("Configuration"))
            }
            let repair = try ChildProcess.run(admin, ["--store", directory, "verify", "--repair"])
            #expect(repair.status == 1, "problems found and repaired: \(repair.output)\(repair.standardError)")
            let after = try ChildProcess.run(admin, ["--store", directory, "checkpoint"])
            #expect(after.status == 0, "\(after.standardError)")
        }
    }

    @Test func writerCommandsFailWhileAnotherProcessWritesButReadsWork() throws {
        try withTemporaryDirectory { directory throws in
            let holder = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-writer", directory])
            #expect(holder.wait(for: "ready"))
            defer { _ = holder.kill() }
            let checkpoint = try ChildProcess.run(admin, ["--store", directory, "checkpoint"])
            #expect(checkpoint.status == 74)
            #expect(checkpoint.standardError.contains("open for writing by another process (pid \(holder.processIdentifier))"))
            let stats = try ChildProcess.run(admin, ["--store", directory, "stats", "--json"])
            #expect(stats.status == 0, "read-only fallback: \(stats.standardError)")
        }
    }
}
