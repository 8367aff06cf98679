import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// The synced watermark on disk may be older than the last sync by any number of syncs: the
/// leader never syncs `wal-synced`, so after a power cut it holds whatever the kernel last
/// wrote back. An older watermark only claims less: it never makes recovery call a hole media
/// damage, nor drop a record that is intact. What it costs is detection: damage in records
/// synced after it reads as a torn tail (reported, not refused).
@Suite struct LogStaleWatermarkTests {
    private func urls(_ store: ImageStore) throws -> Set<String> { Set(try store.entries().map(\.url)) }
    private func firstURLs(_ count: Int) -> Set<String> { Set((0..<count).map { LogTest.smallEntry($0).url }) }

    /// A log of 10 `.sync` records and 5 written unsynced, copied as a kill leaves it, whose
    /// watermark file is the one written after the 3rd sync (7 syncs behind).
    private func staleStore(in directory: String) throws -> (copy: String, segment: String, ends: [Int]) {
        var configuration = LogTest.configuration(applyLog: false, durability: .batched(within: .seconds(3600)))
        configuration.logSegmentBytes = 1 << 20
        let original = directory + "/original", copy = directory + "/stale"
        let store = try ImageStore(path: original, configuration: configuration)
        for n in 0..<3 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url, durability: .sync) }
        let early = try Data(contentsOf: URL(fileURLWithPath: original + "/" + LogTest.watermarkName))
        for n in 3..<10 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url, durability: .sync) }
        for n in 10..<15 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url) }
        try LogTest.copyStore(original, to: copy, watermark: true)
        store.abandonForTesting()
        try early.write(to: URL(fileURLWithPath: copy + "/" + LogTest.watermarkName))
        let segment = try #require(try LogTest.segments(copy).first)
        let ends = try LogTest.recordEnds(in: segment)
        try #require(ends.count == 15)
        return (copy, segment, ends)
    }

    @Test func anIntactLogWithAWatermarkSeveralSyncsBehindOpensWithEveryRecord() throws {
        try withTemporaryDirectory { directory throws in
            let (copy, _, _) = try staleStore(in: directory)
            let store = try ImageStore(path: copy, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(store.recoveryReport.syncedWatermark == 3)
            #expect(store.recoveryReport.recordsReplayed == 15)
            #expect(store.recoveryReport.tornRecordsDropped == 0 && store.recoveryReport.tornBytesDropped == 0)
            #expect(store.recoveryReport.salvaged.isEmpty && store.recoveryReport.warnings.isEmpty)
            #expect(try urls(store) == firstURLs(15))
            try checkConsistency(of: store)
        }
    }

    /// A hole in the unsynced records (the power cut's own damage) is a torn tail whatever the
    /// watermark says, and every synced record before it is kept.
    @Test func aHoleAfterTheLastSyncIsATornTailAndKeepsEverySyncedRecord() throws {
        try withTemporaryDirectory { directory throws in
            let (copy, segment, ends) = try staleStore(in: directory)
            try FileCorruption.flipByte(at: ends[11] + 40, in: segment)  // record 13, unsynced
            let store = try ImageStore(path: copy, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(try urls(store) == firstURLs(12))
            #expect(store.recoveryReport.tornRecordsDropped == 2, "records 14 and 15")
            #expect(store.recoveryReport.tornBytesDropped == ends[14] - ends[11])
            try checkConsistency(of: store)
        }
    }

    /// The cost, as the format's spec says: media damage in a record synced after the watermark
    /// last reached the disk reads as a torn tail. It is dropped with what follows and reported
    /// (`tornRecordsDropped`, `tornBytesDropped`), never silently, and never refused as
    /// damage. With the watermark current, the same damage is `walCorrupt`.
    @Test func damageInARecordSyncedAfterAStaleWatermarkIsReportedAsATornTail() throws {
        try withTemporaryDirectory { directory throws in
            let (copy, segment, ends) = try staleStore(in: directory)
            try FileCorruption.flipByte(at: ends[5] + 40, in: segment)  // record 7, synced
            let store = try ImageStore(path: copy, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(try urls(store) == firstURLs(6))
            #expect(store.recoveryReport.tornRecordsDropped == 8, "records 8 to 15")
            #expect(store.recoveryReport.tornBytesDropped == ends[14] - ends[5])
            try checkConsistency(of: store)
        }
    }
}
