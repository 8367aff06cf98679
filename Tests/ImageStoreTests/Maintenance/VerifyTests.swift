import Foundation
import ImageStore
import ImageStoreTestSupport
import LMDB
import Testing

/// `verify` finds damage made on purpose, and `repair` fixes what it says it fixes.
@Suite struct VerifyTests {
    /// A store holding the sample images, closed.
    private func makeStore(_ directory: String) throws {
        let store = try ImageStore(path: directory, configuration: makeConfiguration(validation: .rejectInvalid))
        for (name, data) in try Fixtures.images() { try store.put(data, for: "https://x.test/\(name)") }
        store.close()
    }

    /// Runs `damage` on the store's LMDB databases directly, as a bug or a bad disk would.
    private func damage(_ directory: String, _ body: (borrowing Transaction, [String: Database]) throws -> Void) throws {
        let environment = try Environment.open(path: directory)
        var databases: [String: Database] = [:]
        for name in ["meta", "entries", "blobs", "expiry", "access"] { databases[name] = try environment.openDatabase(named: name, create: false) }
        try environment.write { txn in try body(txn, databases) }
    }

    private func firstKey(_ txn: borrowing Transaction, _ database: Database) throws -> [UInt8] {
        var key: [UInt8] = []
        try txn.scan(database) { k, _ in key = Array(k); return false }
        return key
    }

    private func verify(_ directory: String, repair: Bool = false) throws -> VerifyReport {
        var configuration = makeConfiguration()
        configuration.readOnly = !repair
        let store = try ImageStore(path: directory, configuration: configuration)
        defer { store.close() }
        return try store.verify(ImageStore.VerifyOptions(repair: repair))
    }

    @Test func aHealthyStoreIsOK() throws {
        try withTemporaryDirectory { directory throws in
            try makeStore(directory)
            let report = try verify(directory)
            #expect(report.problems == [])
            #expect(report.entriesChecked == 7)
        }
    }

    @Test(arguments: [
        ("flipped blob byte", VerifyProblem.Kind.checksumMismatch),
        ("deleted metadata record", .orphanBlob),
        ("deleted blob", .missingBlob),
        ("index row pointing nowhere", .danglingIndexRow),
        ("missing index row", .missingIndexRow),
        ("wrong counter", .wrongCounter),
        ("undecodable record", .malformedRecord),
    ])
    func damageIsFoundAndRepaired(damageKind: String, expected: VerifyProblem.Kind) throws {
        try withTemporaryDirectory { directory throws in
            try makeStore(directory)
            try damage(directory) { txn, db in
                switch damageKind {
                case "flipped blob byte":
                    let key = try firstKey(txn, db["blobs"]!)
                    var blob = Array(try txn.get(db["blobs"]!, key: key)!)
                    blob[blob.count / 2] ^= 0x40
                    try txn.put(db["blobs"]!, key: key, value: blob)
                case "deleted metadata record": try txn.delete(db["entries"]!, key: try firstKey(txn, db["entries"]!))
                case "deleted blob": try txn.delete(db["blobs"]!, key: try firstKey(txn, db["blobs"]!))
                case "index row pointing nowhere": try txn.put(db["access"]!, key: [UInt8](repeating: 0x7F, count: 26), value: [])
                case "missing index row": try txn.delete(db["access"]!, key: try firstKey(txn, db["access"]!))
                case "wrong counter": try txn.put(db["meta"]!, key: Array("logical-bytes".utf8), value: [1, 0, 0, 0, 0, 0, 0, 0])
                default: try txn.put(db["entries"]!, key: try firstKey(txn, db["entries"]!), value: [9, 9, 9])
                }
            }
            let found = try verify(directory)
            #expect(found.problems.map(\.kind).contains(expected), "\(found.problems)")
            #expect(found.unrepaired.count == found.problems.count)

            let repaired = try verify(directory, repair: true)
            #expect(!repaired.problems.isEmpty && repaired.unrepaired.isEmpty, "\(repaired.problems)")
            #expect(try verify(directory).problems == [], "a second verify finds nothing")

            let store = try ImageStore(path: directory, configuration: makeConfiguration())
            defer { store.close() }
            let quarantined = try store.quarantinedEntries()
            let setsAside = [VerifyProblem.Kind.checksumMismatch, .orphanBlob, .missingBlob, .malformedRecord].contains(expected)
            #expect(quarantined.isEmpty == !setsAside, "bad entries go to the quarantine, never silently away")
            if expected == .checksumMismatch { #expect(quarantined.first?.url?.hasPrefix("https://x.test/") == true) }
            #expect(try store.purgeQuarantine() == quarantined.count)
            #expect(try store.quarantinedEntries().isEmpty)
        }
    }

    /// Each entry's key is the hash of its record's URL: a flipped URL byte makes the entry
    /// unreachable, and verify says so (and repair sets it aside).
    @Test func anEntryWhoseKeyIsNotTheHashOfItsURLIsDamage() throws {
        try withTemporaryDirectory { directory throws in
            try makeStore(directory)
            try damage(directory) { txn, db in
                let key = try firstKey(txn, db["entries"]!)
                var record = Array(try txn.get(db["entries"]!, key: key)!)
                record[80 + 12] ^= 0x01  // a byte of the URL (offset 80, `StoreFormat.swift`)
                try txn.put(db["entries"]!, key: key, value: record)
            }
            let found = try verify(directory)
            #expect(found.problems.map(\.kind.rawValue) == ["wrong-key"], "\(found.problems)")
            let repaired = try verify(directory, repair: true)
            #expect(repaired.problems.map(\.kind.rawValue) == ["wrong-key"] && repaired.unrepaired.isEmpty, "\(repaired.problems)")
            #expect(try verify(directory).problems == [])
            #expect(try verify(directory).entriesChecked == 6)
        }
    }

    /// The same through `imgstore-admin verify`: exit 4, naming the problem.
    @Test func adminVerifyExitsFourForAFlippedURLByte() throws {
        try withTemporaryDirectory { directory throws in
            try makeStore(directory)
            let url = Array("https://x.test/photo-baseline.jpg".utf8)
            // Every copy: LMDB's copy-on-write leaves older ones on free pages.
            let offsets = try FileCorruption.offsets(of: Data(url), in: directory + "/data.mdb")
            try #require(!offsets.isEmpty)
            for offset in offsets { try FileCorruption.flipByte(at: offset + url.count - 5, in: directory + "/data.mdb") }
            let run = try ChildProcess.run(AdminRun.binary, ["--store", directory, "verify"])
            #expect(run.status == 4, "\(run.output)\(run.standardError)")
            #expect(run.output.hasPrefix("wrong-key: https://x.test/photo-baselin"), "\(run.output)")
        }
    }

    @Test func midLogDamageIsReportedAndATornTailIsNot() throws {
        try withTemporaryDirectory { directory throws in
            // The last record was not synced yet (after the synced watermark): cut short, it is
            // a torn tail.
            try LogTest.makeKilledStore(at: directory + "/original", copy: directory + "/store", synced: 4, unsynced: 1)
            let directory = directory + "/store"
            let segment = try #require(try LogTest.segments(directory).first)
            let ends = try LogTest.recordEnds(in: segment)
            try FileHandle(forWritingTo: URL(fileURLWithPath: segment)).truncate(atOffset: UInt64(ends[4] - 10))
            #expect(try verify(directory).problems == [], "a torn tail is the normal crash case")
            try FileCorruption.flipByte(at: ends[1] + 40, in: segment)
            let report = try verify(directory)
            #expect(report.problems.map(\.kind) == [.damagedLog])
        }
    }

    /// A recycled segment keeps its old size: when its new records end less than a header
    /// before that, the stale bytes left at its end are not a record, and the next segment
    /// continuing the sequence proves it (the writer rolls only after the last record). Found
    /// as verify's false alarm under writers; recovery at open refused the same way.
    @Test func aStaleTailShorterThanAHeaderBeforeTheNextSegmentIsNotDamage() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 40)
            let segments = try LogTest.segments(directory)
            try #require(segments.count >= 2)
            let ends = try LogTest.recordEnds(in: segments[0])
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: segments[0]))
            try handle.truncate(atOffset: UInt64(ends.last! + 1))
            try handle.seek(toOffset: UInt64(ends.last!))
            try handle.write(contentsOf: Data([0x5A]))  // a stale byte of the file's older life
            try handle.close()
            #expect(try verify(directory).problems == [])
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(store.recoveryReport.recordsReplayed == 40)
            #expect(try store.statistics().entryCount == 40)
        }
    }

    @Test func verifyRunsWhileAnotherProcessWrites() throws {
        try withTemporaryDirectory { directory throws in
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["put-forever", directory, "2", "sync", "3"])
            defer { _ = writer.kill() }
            #expect(writer.wait(for: "ready"))
            #expect(writer.wait(for: "acked"))
            var checked = 0
            for _ in 0..<20 {
                let report = try verify(directory)
                #expect(report.problems == [])
                checked += report.entriesChecked
                usleep(20_000)
            }
            #expect(checked > 0)
        }
    }
}
