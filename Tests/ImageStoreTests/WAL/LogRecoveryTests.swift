import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

@Suite struct LogRecoveryTests {
    @Test func anAbandonedStoreReplaysItsLogOnOpen() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 30)
            #expect(try !LogTest.segments(directory).isEmpty)
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(store.recoveryReport.recordsReplayed == 30)
            #expect(store.recoveryReport.tornBytesDropped == 0)
            for n in 0..<30 { #expect(try store.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
            #expect(try LogTest.segments(directory).count == 1, "replayed segments were checkpointed away")
        }
    }

    @Test func aCleanCloseLeavesNothingToReplay() throws {
        try withTemporaryDirectory { directory throws in
            do {
                let store = try ImageStore(path: directory, configuration: LogTest.configuration())
                for n in 0..<40 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url) }
                store.close()
            }
            #expect(try LogTest.segments(directory).isEmpty)
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            var clean = RecoveryReport()
            clean.syncedWatermark = 40  // the last sync covered every record
            #expect(store.recoveryReport == clean)
            #expect(try store.statistics().entryCount == 40)
        }
    }

    @Test func truncatingTheLogAtEveryOffsetRecoversExactlyTheWholeRecordsBeforeIt() throws {
        try withTemporaryDirectory { directory throws in
            let original = directory + "/original"
            try LogTest.makeCrashedStore(at: original, count: 4)
            let segment = try #require(try LogTest.segments(original).first)
            let ends = try LogTest.recordEnds(in: segment)
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: segment)))
            #expect(ends.count == 4)
            for cut in 0...ends.last! {
                let copy = directory + "/cut-\(cut)"
                try LogTest.copyStore(original, to: copy)
                let copiedSegment = copy + "/" + URL(fileURLWithPath: segment).lastPathComponent
                try FileHandle(forWritingTo: URL(fileURLWithPath: copiedSegment)).truncate(atOffset: UInt64(cut))
                let store = try ImageStore(path: copy, configuration: LogTest.configuration())
                let whole = ends.filter { $0 <= cut }.count
                let urls = Set(try store.entries().map(\.url))
                #expect(urls == Set((0..<whole).map { LogTest.smallEntry($0).url }), "cut at \(cut)")
                let boundary = ends.last { $0 <= cut } ?? 0
                // A cut-off header that happens to be all zeros reads as zeroed space: nothing to drop.
                let torn = bytes[boundary..<cut].allSatisfy { $0 == 0 } ? 0 : cut - boundary
                #expect(store.recoveryReport.tornBytesDropped == torn, "cut at \(cut)")
                store.close()
                try FileManager.default.removeItem(atPath: copy)
            }
        }
    }

    @Test func aBitFlipAnywhereIsDetected() throws {
        try withTemporaryDirectory { directory throws in
            let original = directory + "/original"
            try LogTest.makeCrashedStore(at: original, count: 4)
            try LogTest.forEachFlippedCopy(of: original, in: directory) { copy, offset, ends in
                let damaged = ends.firstIndex { offset < $0 }!
                do {
                    let store = try ImageStore(path: copy, configuration: LogTest.configuration())
                    // Only damage in the last record may read as a torn tail.
                    #expect(damaged == ends.count - 1, "flip at \(offset) in record \(damaged) went unnoticed")
                    #expect(Set(try store.entries().map(\.url)) == Set((0..<damaged).map { LogTest.smallEntry($0).url }))
                    #expect(store.recoveryReport.tornBytesDropped > 0)
                    store.close()
                } catch let error as ImageStoreError {
                    guard case .walCorrupt = error else { Issue.record("flip at \(offset): \(error)"); return }
                    #expect(damaged < ends.count - 1)
                }
            }
        }
    }

    @Test func midLogDamageRefusesToOpenAndSalvageSkipsIt() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 5)
            let segment = try #require(try LogTest.segments(directory).first)
            let ends = try LogTest.recordEnds(in: segment)
            try FileCorruption.flipByte(at: ends[1] + 40, in: segment)  // inside record 2's payload

            #expect { try ImageStore(path: directory, configuration: LogTest.configuration()) } throws: { error in
                guard case .walCorrupt(_, let detail) = error as? ImageStoreError else { return false }
                return detail.contains("at byte \(ends[1])") && detail.contains("followed by valid records")
            }
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(salvage: true))
            defer { store.close() }
            #expect(store.recoveryReport.salvaged.count >= 1)
            #expect(store.recoveryReport.salvaged[0].contains("at byte \(ends[1])"))
            let urls = Set(try store.entries().map(\.url))
            #expect(urls == Set([0, 1, 3, 4].map { LogTest.smallEntry($0).url }))
        }
    }

    @Test func powerLossKeepsEverySyncedWriteAndNothingCorrupt() throws {
        try withTemporaryDirectory { directory throws in
            let fileSystem = PowerLossLogFileSystem()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(applyLog: false, fileSystem: fileSystem))
            for n in 0..<10 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url, durability: .sync) }
            for n in 10..<20 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url, durability: .batched(within: .seconds(3600))) }
            fileSystem.powerLoss()
            store.abandonForTesting()

            let reopened = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { reopened.close() }
            for n in 0..<10 { #expect(try reopened.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
            for n in 10..<20 {
                let image = try reopened.get(LogTest.smallEntry(n).url)
                #expect(image == nil || image?.data == LogTest.smallEntry(n).data, "an unsynced write is whole or absent")
            }
            try checkConsistency(of: reopened)
        }
    }

    // MARK: - Checkpoints that fail

    @Test func aFailedCheckpointKeepsItsSegmentsAndTheNextOpenNeedsNoContiguityBelowAppliedSeq() throws {
        try withTemporaryDirectory { directory throws in
            let faults = FaultyLogFileSystem()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(fileSystem: faults))
            // Retiring segments fails (background checkpoints and this explicit one).
            faults.fail(.rename, with: EIO)
            for n in 0..<40 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url) }
            #expect(throws: ImageStoreError.self) { try store.checkpoint() }
            faults.heal()
            for n in 40..<80 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url) }
            try store.checkpoint()
            // The failed checkpoint's segments were retired by the later one, not left behind.
            #expect(try LogTest.segments(directory).count == 1, "only the open segment remains")
            store.abandonForTesting()

            let reopened = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { reopened.close() }
            for n in 0..<80 { #expect(try reopened.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
        }
    }

    @Test func segmentsLeftBelowAppliedSeqWithAGapAfterThemOpenCleanly() throws {
        try withTemporaryDirectory { directory throws in
            // What a failed checkpoint used to leave: an old segment, then newer ones retired.
            let faults = FaultyLogFileSystem()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(fileSystem: faults))
            faults.fail(.rename, with: EIO)  // keeps every segment on disk
            for n in 0..<80 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url) }
            _ = try store.statistics()  // everything applied to LMDB
            let before = try LogTest.segments(directory)
            store.abandonForTesting()
            let copy = directory + "/gap"
            try LogTest.copyStore(directory, to: copy)
            let names = try LogTest.segments(copy)
            try #require(names.count >= 3, "segments: \(before)")
            try FileManager.default.removeItem(atPath: names[1])  // a gap below applied-seq
            let reopened = try ImageStore(path: copy, configuration: LogTest.configuration())
            defer { reopened.close() }
            for n in 0..<80 { #expect(try reopened.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
        }
    }

}
