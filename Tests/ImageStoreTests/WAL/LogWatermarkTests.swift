import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// The synced watermark (log format version 2): records up to the last completed sync are
/// trusted, a hole after it is a torn tail, and a log that ends before it lost acknowledged
/// writes.
@Suite struct LogWatermarkTests {
    private func urls(_ store: ImageStore) throws -> Set<String> { Set(try store.entries().map(\.url)) }
    private func firstURLs(_ count: Int) -> Set<String> { Set((0..<count).map { LogTest.smallEntry($0).url }) }

    private func isWalCorrupt(_ error: any Error, naming text: String) -> Bool {
        guard case .walCorrupt(_, let detail) = error as? ImageStoreError else { return false }
        return detail.contains(text)
    }

    /// A killed store (see `LogTest.makeKilledStore`) in `directory`/killed, with its one
    /// segment and the ends of its records.
    private func killedStore(in directory: String, synced: Int, unsynced: Int) throws -> (copy: String, segment: String, ends: [Int]) {
        let copy = directory + "/killed"
        try LogTest.makeKilledStore(at: directory + "/original", copy: copy, synced: synced, unsynced: unsynced)
        let segment = try #require(try LogTest.segments(copy).first)
        let ends = try LogTest.recordEnds(in: segment)
        try #require(ends.count == synced + unsynced)
        return (copy, segment, ends)
    }

    // MARK: - Holes

    @Test func aHoleAfterTheSyncedWatermarkIsATornTailDroppedAndReported() throws {
        try withTemporaryDirectory { directory throws in
            let (copy, segment, ends) = try killedStore(in: directory, synced: 5, unsynced: 5)
            // Record 7 (unsynced) lost a page; records 8 to 10 after it reached the disk.
            try FileCorruption.flipByte(at: ends[5] + 40, in: segment)

            let store = try ImageStore(path: copy, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(try urls(store) == firstURLs(6), "the records before the hole, no more")
            let report = store.recoveryReport
            #expect(report.syncedWatermark == 5)
            #expect(report.tornRecordsDropped == 3, "records 8 to 10")
            #expect(report.tornBytesDropped == ends[9] - ends[5])
            #expect(report.salvaged.isEmpty)
            try checkConsistency(of: store)
        }
    }

    @Test func aHoleBeforeTheSyncedWatermarkIsMediaDamage() throws {
        try withTemporaryDirectory { directory throws in
            let (copy, segment, ends) = try killedStore(in: directory, synced: 10, unsynced: 0)
            try FileCorruption.flipByte(at: ends[5] + 40, in: segment)  // record 7, synced
            #expect { try ImageStore(path: copy, configuration: LogTest.configuration()) } throws: {
                isWalCorrupt($0, naming: "followed by valid records")
            }
        }
    }

    @Test func aDamagedLastRecordThatWasSyncedIsMediaDamageNotATornTail() throws {
        try withTemporaryDirectory { directory throws in
            let (copy, segment, ends) = try killedStore(in: directory, synced: 10, unsynced: 0)
            try FileCorruption.flipByte(at: ends[8] + 40, in: segment)  // record 10, synced, the last
            #expect { try ImageStore(path: copy, configuration: LogTest.configuration()) } throws: {
                isWalCorrupt($0, naming: "sequence numbers 10 to 10 are missing")
            }
            let store = try ImageStore(path: copy, configuration: LogTest.configuration(salvage: true))
            defer { store.close() }
            #expect(try urls(store) == firstURLs(9))
            #expect(store.recoveryReport.salvaged.count == 1)
        }
    }

    // MARK: - A log cut short or deleted

    @Test func aLogCutAtARecordBoundaryWithUnappliedWritesIsReported() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 10)  // all synced, none applied
            let segment = try #require(try LogTest.segments(directory).first)
            let ends = try LogTest.recordEnds(in: segment)
            try #require(ends.count == 10)
            try FileHandle(forWritingTo: URL(fileURLWithPath: segment)).truncate(atOffset: UInt64(ends[6]))

            #expect { try ImageStore(path: directory, configuration: LogTest.configuration()) } throws: {
                isWalCorrupt($0, naming: "sequence numbers 8 to 10 are missing")
            }
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(salvage: true))
            defer { store.close() }
            #expect(try urls(store) == firstURLs(7))
            #expect(store.recoveryReport.salvaged.first?.contains("8 to 10") == true)
        }
    }

    @Test func aDeletedNewestSegmentWithUnappliedWritesIsReported() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 60)  // all synced, none applied
            let segments = try LogTest.segments(directory)
            try #require(segments.count >= 2)
            let lost = try LogTest.recordEnds(in: segments.last!).count
            try FileManager.default.removeItem(atPath: segments.last!)

            #expect { try ImageStore(path: directory, configuration: LogTest.configuration()) } throws: {
                isWalCorrupt($0, naming: "sequence numbers \(60 - lost + 1) to 60 are missing")
            }
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(salvage: true))
            defer { store.close() }
            #expect(try urls(store) == firstURLs(60 - lost))
            #expect(store.recoveryReport.salvaged.count == 1)
        }
    }

    @Test func aSalvagedOpenResetsTheWatermarkSoTheNextOpenIsClean() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 10)
            let segment = try #require(try LogTest.segments(directory).first)
            let ends = try LogTest.recordEnds(in: segment)
            try FileHandle(forWritingTo: URL(fileURLWithPath: segment)).truncate(atOffset: UInt64(ends[6]))
            try ImageStore(path: directory, configuration: LogTest.configuration(salvage: true)).close()
            // Sequence numbers 8 to 10 are reused by new writes; the old claim must not refuse them.
            let crashed = try ImageStore(path: directory, configuration: LogTest.configuration(applyLog: false))
            try crashed.put(LogTest.smallEntry(20).data, for: LogTest.smallEntry(20).url)
            crashed.abandonForTesting()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(try urls(store) == firstURLs(7).union([LogTest.smallEntry(20).url]))
            #expect(store.recoveryReport.salvaged.isEmpty && store.recoveryReport.warnings.isEmpty)
        }
    }

    // MARK: - Format version 1

    /// A store in `directory`/v1 whose log of 10 unapplied records is in format version 1:
    /// the segments a version-1 writer wrote (they are unchanged in version 2), no watermark.
    private func version1Store(in directory: String) throws -> String {
        let original = directory + "/original"
        try LogTest.makeCrashedStore(at: original, count: 10)
        let old = directory + "/v1"
        try LogTest.copyStore(original, to: old, watermark: false)
        return old
    }

    /// A version-1 log is the same segments without the watermark file: it opens with the
    /// version-1 rules (no watermark), and the store writes version 2 from then on.
    @Test func aStoreWhoseLogIsInFormatVersion1OpensAndReplaysIt() throws {
        try withTemporaryDirectory { directory throws in
            let old = try version1Store(in: directory)
            #expect(!FileManager.default.fileExists(atPath: old + "/" + LogTest.watermarkName))

            do {
                let store = try ImageStore(path: old, configuration: LogTest.configuration())
                defer { store.close() }
                #expect(store.recoveryReport.recordsReplayed == 10)
                #expect(store.recoveryReport.syncedWatermark == nil)
                #expect(try urls(store) == firstURLs(10))
                try store.put(LogTest.smallEntry(11).data, for: LogTest.smallEntry(11).url)
            }
            #expect(FileManager.default.fileExists(atPath: old + "/" + LogTest.watermarkName))
            let store = try ImageStore(path: old, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(store.recoveryReport.syncedWatermark == 11)
            #expect(try store.statistics().entryCount == 11)
        }
    }

    @Test func aVersion1LogCutAtARecordBoundaryStillOpensAsBefore() throws {
        try withTemporaryDirectory { directory throws in
            let old = try version1Store(in: directory)
            let segment = try #require(try LogTest.segments(old).first)
            let ends = try LogTest.recordEnds(in: segment)
            try FileHandle(forWritingTo: URL(fileURLWithPath: segment)).truncate(atOffset: UInt64(ends[6]))
            let store = try ImageStore(path: old, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(try urls(store) == firstURLs(7), "without a watermark nothing tells the cut from an end")
        }
    }
}
