import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Replay commits in batches no larger than the applier's, so it cannot hit `MDB_TXN_FULL` or
/// `storeFull` where normal operation would not.
@Suite struct LogReplayBatchTests {
    /// `LogApplier.maxBatchRecords`, the cap replay must share (the test target cannot see it).
    static let applierBatchRecords = 2048

    @Test func aSegmentHoldingMoreThanOneApplierBatchReplaysInSeveralTransactions() throws {
        try withTemporaryDirectory { directory throws in
            let count = Self.applierBatchRecords * 2 + 100
            var configuration = LogTest.configuration(applyLog: false, durability: .none)
            configuration.logSegmentBytes = 64 << 20  // every record in one segment
            do {
                let store = try ImageStore(path: directory, configuration: configuration)
                for n in 0..<count { try store.put(Data([UInt8(n & 0xFF), 1, 2, 3]), for: "https://x.test/\(n)") }
                store.abandonForTesting()
            }
            try #require(try LogTest.segments(directory).count == 1)

            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(store.recoveryReport.recordsReplayed == count)
            #expect(store.recoveryReport.replayTransactions == 3)
            #expect(try store.statistics().entryCount == count)
            #expect(try store.get("https://x.test/\(count - 1)")?.data == Data([UInt8((count - 1) & 0xFF), 1, 2, 3]))
        }
    }
}
