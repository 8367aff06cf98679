import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// A log cut short, partly deleted or damaged where LMDB already holds the records.
@Suite struct LogCutShortTests {
    /// Puts `count` small entries synced, lets LMDB apply them all and checkpoints it (LMDB
    /// holds them durably: a crash rolls LMDB back to its last checkpoint, `LMDB/MetaPages.swift`),
    /// then abandons the store (as a crash would) with its segments still on disk: applied-seq is
    /// `count`. The open segment is never retired; with `keepSegments`, no segment is.
    private func makeAppliedStore(at directory: String, count: Int, keepSegments: Bool = false) throws {
        let faults = FaultyLogFileSystem()
        let store = try ImageStore(path: directory, configuration: LogTest.configuration(fileSystem: faults))
        if keepSegments { faults.fail(.rename, with: EIO) }  // no checkpoint retires a segment
        for n in 0..<count { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url) }
        if keepSegments {
            // LMDB is synced and its pages kept first; then retiring a segment fails.
            #expect(throws: ImageStoreError.self) { try store.checkpoint() }
        } else {
            try store.checkpoint()
        }
        store.abandonForTesting()
    }

    // MARK: - Damage in records LMDB already holds

    @Test func aFlippedByteInAnAlreadyAppliedRecordDoesNotRefuseTheOpen() throws {
        try withTemporaryDirectory { directory throws in
            try makeAppliedStore(at: directory, count: 5)
            let segment = try #require(try LogTest.segments(directory).first)
            let ends = try LogTest.recordEnds(in: segment)
            try #require(ends.count == 5)
            try FileCorruption.flipByte(at: ends[1] + 40, in: segment)  // inside record 3's payload

            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            for n in 0..<5 { #expect(try store.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
            #expect(store.recoveryReport.appliedBytesSkipped == ends[2] - ends[1])
            #expect(store.recoveryReport.appliedRecordsMissing == 1)
            #expect(store.recoveryReport.salvaged.isEmpty, "no salvage was needed")
            #expect(store.recoveryReport.warnings.count == 1)
            try checkConsistency(of: store)
        }
    }

    @Test func aFlipAnywhereInAppliedRecordsOpensWithEveryEntryAndIsReported() throws {
        try withTemporaryDirectory { directory throws in
            let original = directory + "/original"
            try makeAppliedStore(at: original, count: 5)
            try LogTest.forEachFlippedCopy(of: original, in: directory) { copy, offset, _ in
                let store = try ImageStore(path: copy, configuration: LogTest.configuration())
                #expect(try store.entries().count == 5, "flip at \(offset)")
                let report = store.recoveryReport
                #expect(report.appliedRecordsMissing >= 1 && !report.warnings.isEmpty, "flip at \(offset): \(report)")
                store.close()
            }
        }
    }

    // MARK: - A log that ends before applied-seq

    @Test func aLogCutShortBeforeAppliedSeqIsReportedWithTheRecordsItLost() throws {
        try withTemporaryDirectory { directory throws in
            try makeAppliedStore(at: directory, count: 5)
            let segment = try #require(try LogTest.segments(directory).first)
            let ends = try LogTest.recordEnds(in: segment)
            try FileHandle(forWritingTo: URL(fileURLWithPath: segment)).truncate(atOffset: UInt64(ends[1]))

            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            for n in 0..<5 { #expect(try store.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
            #expect(store.recoveryReport.appliedRecordsMissing == 3, "records 3 to 5")
            let warning = try #require(store.recoveryReport.warnings.first)
            #expect(warning.contains("ends at sequence 2") && warning.contains("applied-seq 5"), "\(warning)")
        }
    }

    @Test func aDeletedNewestSegmentIsReported() throws {
        try withTemporaryDirectory { directory throws in
            try makeAppliedStore(at: directory, count: 80, keepSegments: true)
            let segments = try LogTest.segments(directory)
            try #require(segments.count >= 2)
            let lost = try LogTest.recordEnds(in: segments.last!).count
            try FileManager.default.removeItem(atPath: segments.last!)

            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            for n in 0..<80 { #expect(try store.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
            #expect(store.recoveryReport.appliedRecordsMissing == lost)
            #expect(store.recoveryReport.warnings.first?.contains("applied-seq 80") == true)
        }
    }

    // MARK: - Unapplied records missing

    @Test func aMissingSegmentOfUnappliedRecordsRefusesTheOpenNamingTheRangeUnlessSalvaging() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 60)  // applied-seq 0
            let segments = try LogTest.segments(directory)
            try #require(segments.count >= 3)
            let missing = try LogTest.recordEnds(in: segments[1]).count
            let first = try LogTest.recordEnds(in: segments[0]).count + 1
            try FileManager.default.removeItem(atPath: segments[1])

            #expect { try ImageStore(path: directory, configuration: LogTest.configuration()) } throws: { error in
                guard case .walCorrupt(_, let detail) = error as? ImageStoreError else { return false }
                return detail.contains("sequence numbers \(first) to \(first + missing - 1) are missing")
            }
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(salvage: true))
            defer { store.close() }
            #expect(store.recoveryReport.salvaged.count == 1)
            // The refused open applied what came before the gap (replay is idempotent).
            #expect(store.recoveryReport.recordsReplayed + store.recoveryReport.recordsAlreadyApplied == 60 - missing)
        }
    }
}
