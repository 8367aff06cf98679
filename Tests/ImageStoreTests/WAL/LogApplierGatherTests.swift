import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Testing

/// The applier gathers written records into few LMDB transactions (each commit syncs LMDB's
/// data pages), never makes anyone who waits for it wait for the gathering, and does not gather
/// large records.
@Suite struct LogApplierGatherTests {
    /// A store whose applier gathers for an hour: only a settle (or enough bytes) ends it.
    private func makeGatheringStore(at directory: String, delay: TimeInterval = 3_600) throws -> ImageStore {
        var configuration = makeConfiguration()
        configuration.applierGatherDelay = .seconds(delay)
        return try ImageStore(path: directory, configuration: configuration)
    }

    @Test func syncedPutsOfOneWriterAreAppliedInOneTransactionOnceSomeoneSettles() throws {
        try withTemporaryDirectory { directory throws in
            let store = try makeGatheringStore(at: directory)
            defer { store.close() }
            let applier = try #require(store.writes?.applier)
            let transactionsBefore = applier.transactions.load(ordering: .relaxed)
            let groupsBefore = store.metrics.groupCommitBatchRecords.count
            let entries = (0..<20).map(LogTest.smallEntry)
            for (url, data) in entries { try store.put(data, for: url, durability: .sync) }
            // One writer: a group commit (and a log sync) per put.
            #expect(store.metrics.groupCommitBatchRecords.count - groupsBefore == entries.count)
            // Acknowledged and readable (from the pending index) before LMDB holds them.
            for (url, data) in entries { #expect(try store.get(url)?.data == data, "\(url)") }
            _ = try store.statistics()  // settles: the applier commits what it gathered, at once
            #expect(applier.transactions.load(ordering: .relaxed) - transactionsBefore == 1)
            for (url, data) in entries { #expect(try store.get(url)?.data == data, "\(url)") }
        }
    }

    @Test func aCheckpointAndACloseDoNotWaitForTheGathering() throws {
        try withTemporaryDirectory { directory throws in
            let entries = (0..<5).map(LogTest.smallEntry)
            do {
                let store = try makeGatheringStore(at: directory)
                for (url, data) in entries { try store.put(data, for: url, durability: .batched(within: .milliseconds(10))) }
                try store.checkpoint()  // settles first: LMDB holds every put now
                let written = try #require(store.logStatus).writtenSequence
                #expect(try #require(store.writes?.applier).appliedSequence >= written)
                try store.put(Data([1, 2, 3]), for: "https://x.test/last", durability: .none)
                store.close()  // settles and checkpoints: nothing is left to replay
            }
            let reopened = try makeGatheringStore(at: directory)
            defer { reopened.close() }
            #expect(reopened.recoveryReport.recordsReplayed == 0)
            for (url, data) in entries { #expect(try reopened.get(url)?.data == data, "\(url)") }
            #expect(try reopened.get("https://x.test/last")?.data == Data([1, 2, 3]))
        }
    }

    @Test func aStoreDroppedWhileItsApplierGathersLosesNoAcknowledgedWrite() throws {
        try withTemporaryDirectory { directory throws in
            let entries = (0..<8).map(LogTest.smallEntry)
            do {
                let store = try makeGatheringStore(at: directory, delay: 0.2)
                for (url, data) in entries { try store.put(data, for: url, durability: .sync) }
                _ = store  // dropped without close: the log keeps what LMDB lacks
            }
            // The dropped store's writer queue lets the writer lock go once its drain is done.
            var reopened: ImageStore?
            for _ in 0..<3000 where reopened == nil {
                do { reopened = try makeGatheringStore(at: directory) } catch {
                    switch error as? ImageStoreError {
                    case .alreadyOpen?, .writerLocked?: usleep(10_000)
                    default: throw error
                    }
                }
            }
            let store = try #require(reopened, "the dropped store never released its writer lock")
            defer { store.close() }
            for (url, data) in entries { #expect(try store.get(url)?.data == data, "\(url)") }
        }
    }

    /// Records of 64 KiB and more (once they are the recent mean) are applied without a settle,
    /// although the applier gathers small ones, before and after them, for an hour.
    @Test func largeRecordsAreAppliedWithoutWaitingForTheGathering() throws {
        try withTemporaryDirectory { directory throws in
            let store = try makeGatheringStore(at: directory)
            defer { store.close() }
            let applier = try #require(store.writes?.applier)
            let image = Data((0..<(100 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 13) })
            for n in 0..<64 { try store.put(image, for: "https://x.test/large/\(n)", durability: .sync) }
            let written = try #require(store.logStatus).writtenSequence
            // A safety net, not a measurement: gathering would hold them for the hour.
            let deadline = Date() + 30
            while applier.appliedSequence < written && Date() < deadline { usleep(1_000) }
            #expect(applier.appliedSequence >= written, "large records waited for the gathering")

            // Small records after them are gathered again, once they are the recent mean: the
            // last ones wait (for the hour) until a settle.
            for n in 0..<64 { try store.put(Data(repeating: UInt8(n), count: 100), for: "https://x.test/small/\(n)", durability: .sync) }
            let writtenSmall = try #require(store.logStatus).writtenSequence
            #expect(applier.appliedSequence < writtenSmall, "small records are gathered")
            _ = try store.statistics()
            #expect(applier.appliedSequence >= writtenSmall)
        }
    }

    /// Large records found queued together are committed in transactions of about
    /// `streamedBatchBytes`, not all at once: a large commit's sync stalls the log's next one.
    @Test func largeRecordsFoundTogetherAreCommittedInBoundedTransactions() throws {
        try withTemporaryDirectory { directory throws in
            let store = try makeGatheringStore(at: directory)
            defer { store.close() }
            let writes = try #require(store.writes)
            let image = Data((0..<(100 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let count = 64
            // The writer queue is held while the puts are logged, so the applier finds them all
            // queued at once (as one that fell behind the log does).
            let held = DispatchSemaphore(value: 0)
            let holding = DispatchSemaphore(value: 0)
            writes.tier.writer.async {
                holding.signal()
                held.wait()
            }
            holding.wait()
            // A put that throws must not leave the queue held under the close's settle.
            var releasedQueue = false
            defer { if !releasedQueue { held.signal() } }
            for n in 0..<count { try store.put(image, for: "https://x.test/together/\(n)", durability: .sync) }
            let transactionsBefore = writes.applier.transactions.load(ordering: .relaxed)
            held.signal()
            releasedQueue = true
            _ = try store.statistics()  // settles: LMDB holds every put
            let transactions = writes.applier.transactions.load(ordering: .relaxed) - transactionsBefore
            let totalBytes = count * image.count
            // A transaction takes at most the cap plus one record (its URL and key included).
            let largest = LogApplier.streamedBatchBytes + image.count + 4096
            let fewest = (totalBytes + largest - 1) / largest
            #expect(transactions >= fewest, "\(transactions) transactions for \(totalBytes) bytes")
            #expect(transactions <= count)
            for n in [0, count / 2, count - 1] {
                #expect(try store.get("https://x.test/together/\(n)")?.data == image)
            }
        }
    }
}
