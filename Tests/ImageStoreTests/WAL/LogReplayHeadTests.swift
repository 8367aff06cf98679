import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Testing

/// A pipelined replay reads the first segment's head (`LogRecovery.headBytes`) and gives its
/// records to `apply` before it reads the whole segment. The pass over the whole segment goes on
/// where the head's records end: no record is given twice or skipped, a record cut by the end
/// of the head is whole in the second read, and damage inside the head is judged by the rules
/// of a whole segment.
@Suite struct LogReplayHeadTests {
    /// Records of about 300 KB: 40 of them (12 MB) lie across the 8 MiB head.
    private static let count = 40

    /// The image of put `n`: sizes that differ, so no record ends exactly at the head's end.
    private static func image(_ n: Int) -> Data {
        Data((0..<(300_000 + n * 1_117)).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ n) })
    }

    private static func url(_ n: Int) -> String { "https://x.test/head/\(n)" }

    /// A crashed store whose first (64 MiB) segment holds `count` puts that LMDB lacks.
    private static func makeLog(in directory: String) throws {
        var configuration = LogTest.configuration(applyLog: false)
        configuration.logSegmentBytes = 64 << 20
        let store = try ImageStore(path: directory, configuration: configuration)
        for n in 0..<count { try store.put(image(n), for: url(n)) }
        store.abandonForTesting()
    }

    /// The first segment's record ends, with the index of the record the head's end cuts.
    private static func cut(in directory: String) throws -> (segment: String, ends: [Int], cut: Int) {
        let segment = try #require(try LogTest.segments(directory).first)
        let ends = try LogTest.recordEnds(in: segment)
        try #require(ends.count == count)
        let cut = try #require(ends.firstIndex { $0 > LogRecovery.headBytes })
        try #require(cut > 0 && ends[cut - 1] < LogRecovery.headBytes, "a record must lie across the head's end")
        return (segment, ends, cut)
    }

    /// A replay with `awaitApplied`, as the store's open runs it; returns the batches given.
    private static func replay(_ directory: String, appliedSequence: UInt64 = 0) throws -> (report: RecoveryReport, batches: [[SequencedEntry]]) {
        var batches: [[SequencedEntry]] = []
        let recovery = LogRecovery(directory: directory, fileSystem: PosixLogFileSystem(), salvage: false)
        let (report, _) = try recovery.replay(appliedSequence: appliedSequence, apply: { batches.append($0) },
                                              awaitApplied: { _ in })
        return (report, batches)
    }

    /// The head's records come first, as a batch of their own (before the segment is read
    /// whole), and the rest follow once each: the record across the head's end is in the rest.
    /// On the code before, the whole segment was one batch of 40.
    @Test func theHeadsRecordsAreGivenFirstAndEveryRecordOnce() throws {
        try withTemporaryDirectory { directory throws in
            try Self.makeLog(in: directory)
            let (_, _, cut) = try Self.cut(in: directory)
            let (report, batches) = try Self.replay(directory)
            #expect(batches.first?.count == cut, "the first batch holds the records whole inside the head")
            let given = batches.flatMap { $0 }
            #expect(given.map(\.sequence) == (1...UInt64(Self.count)).map { $0 }, "every record once, in order")
            for entry in given {
                guard case let .put(record, data) = entry.entry else {
                    Issue.record("record \(entry.sequence) is not a put")
                    continue
                }
                #expect(data == Self.image(Int(entry.sequence) - 1) && record.url == Self.url(Int(entry.sequence) - 1))
            }
            #expect(report.recordsReplayed == Self.count)
            #expect(report.segmentsRead == 1)
        }
    }

    /// Records at or below applied-seq at the head are counted as applied, not given, as in the
    /// pass over the whole segment.
    @Test func appliedRecordsInTheHeadAreCountedNotGiven() throws {
        try withTemporaryDirectory { directory throws in
            try Self.makeLog(in: directory)
            _ = try Self.cut(in: directory)
            let (report, batches) = try Self.replay(directory, appliedSequence: 10)
            #expect(batches.flatMap { $0 }.map(\.sequence) == (11...UInt64(Self.count)).map { $0 })
            #expect(report.recordsAlreadyApplied == 10)
            #expect(report.recordsReplayed == Self.count - 10)
        }
    }

    /// A store reopened after the crash serves every image, and says it replayed them all.
    @Test func theReopenedStoreServesEveryImage() throws {
        try withTemporaryDirectory { directory throws in
            try Self.makeLog(in: directory)
            _ = try Self.cut(in: directory)
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(store.recoveryReport.recordsReplayed == Self.count)
            for n in 0..<Self.count {
                #expect(try store.image(for: Self.url(n))?.data == Self.image(n), "image \(n)")
            }
        }
    }

    /// Damage inside the head (record 3's payload) and in the record across its end: each
    /// refuses the open as mid-log damage, as in any segment, and salvage skips just that record.
    /// The refused open may already have applied the head's records before the damage (as it
    /// applies earlier segments' before damage in a later one): LMDB then holds a prefix of the
    /// log, and the salvage counts those as applied.
    @Test(arguments: [3, -1])
    func damageInTheHeadOrAcrossItsEndRefusesTheOpen(record: Int) throws {
        try withTemporaryDirectory { directory throws in
            try Self.makeLog(in: directory)
            let (segment, ends, cut) = try Self.cut(in: directory)
            let damaged = record >= 0 ? record : cut
            try FileCorruption.flipByte(at: ends[damaged - 1] + 40, in: segment)  // inside its payload
            #expect { try ImageStore(path: directory, configuration: LogTest.configuration()) } throws: { error in
                guard case .walCorrupt(_, let detail) = error as? ImageStoreError else { return false }
                return detail.contains("at byte \(ends[damaged - 1])") && detail.contains("followed by valid records")
            }
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(salvage: true))
            defer { store.close() }
            let report = store.recoveryReport
            #expect(report.salvaged.count == 1)
            #expect(report.recordsReplayed + report.recordsAlreadyApplied == Self.count - 1)
            for n in 0..<Self.count {
                #expect(try store.image(for: Self.url(n))?.data == (n == damaged ? nil : Self.image(n)), "image \(n)")
            }
        }
    }
}
