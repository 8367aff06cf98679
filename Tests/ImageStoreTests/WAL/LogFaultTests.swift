import Foundation
import Locking
import ImageStore
import ImageStoreTestSupport
import Testing

/// `ENOSPC` and `EIO` on log writes and syncs: a clear error, nothing acknowledged lost, the
/// store refusing writes until reopened, and a clean reopen.
@Suite struct LogFaultTests {
    @Test(arguments: [
        (FaultyLogFileSystem.Operation.write, ENOSPC), (.write, EIO), (.sync, ENOSPC), (.sync, EIO),
    ] as [(FaultyLogFileSystem.Operation, Int32)])
    func aFailingLogFailsThePutAndLosesNothingAcknowledged(operation: FaultyLogFileSystem.Operation, code: Int32) throws {
        try withTemporaryDirectory { directory throws in
            let faults = FaultyLogFileSystem()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(fileSystem: faults))
            for n in 0..<5 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url) }
            faults.fail(operation, with: code)
            do {
                try store.put(LogTest.smallEntry(5).data, for: LogTest.smallEntry(5).url)
                Issue.record("the put was acknowledged despite the fault")
            } catch let error as ImageStoreError {
                if code == ENOSPC {
                    #expect(error == .diskFull(path: directory))
                } else {
                    guard case .logFailed(_, let detail) = error else { Issue.record("got \(error)"); return }
                    #expect(detail.contains("Input/output error"))
                }
            }
            // The store now refuses writes (retrying after a failed sync is unsafe) but reads.
            #expect(throws: ImageStoreError.self) { try store.put(Data([1]), for: "https://x.test/after") }
            for n in 0..<5 { #expect(try store.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
            store.close()

            let reopened = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { reopened.close() }
            for n in 0..<5 { #expect(try reopened.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
            let unacknowledged = try reopened.get(LogTest.smallEntry(5).url)
            #expect(unacknowledged == nil || unacknowledged?.data == LogTest.smallEntry(5).data)
            #expect(try reopened.get("https://x.test/after") == nil)
            try reopened.put(Data([9]), for: "https://x.test/healthy-again")
            try checkConsistency(of: reopened)
        }
    }

    @Test func concurrentWritersInAFailedBatchAllGetTheError() throws {
        try withTemporaryDirectory { directory throws in
            let faults = FaultyLogFileSystem()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(fileSystem: faults))
            defer { store.close() }
            faults.fail(.sync, with: EIO)
            let outcomes = LockedValue<[Bool]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { n in
                let ok = (try? store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url)) != nil
                outcomes.withLock { $0.append(ok) }
            }
            #expect(outcomes.withLock { $0 } == Array(repeating: false, count: 8))
        }
    }

    @Test func aFailingDirectoryListingFailsTheOpenInsteadOfSkippingTheLog() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 5)
            let faults = FaultyLogFileSystem()
            faults.fail(.list, with: EIO)
            #expect { try ImageStore(path: directory, configuration: LogTest.configuration(fileSystem: faults)) } throws: { error in
                guard case .storage(_, let detail) = error as? ImageStoreError else { return false }
                return detail.contains("listing the log") && detail.contains("Input/output error")
            }
            // Nothing was replayed past, reused or retired: a healthy open still finds all of it.
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            #expect(store.recoveryReport.recordsReplayed == 5)
        }
    }


    @Test func anLMDBSyncErrorInACheckpointStopsWritesAndReopeningRecoversFromTheLog() throws {
        try withTemporaryDirectory { directory throws in
            let failing = LockedValue(false)
            var configuration = LogTest.configuration()
            configuration.checkpointSyncFault = {
                failing.withLock { $0 } ? .storage(path: directory, detail: "syncing LMDB failed: Input/output error") : nil
            }
            let store = try ImageStore(path: directory, configuration: configuration)
            failing.withLock { $0 = true }
            // Segments roll and their checkpoints fail: the first failure stops writes for good.
            var acknowledged = 0
            var refusal: ImageStoreError?
            for n in 0..<400 {
                do {
                    try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url)
                    acknowledged += 1
                } catch let error as ImageStoreError {
                    refusal = error
                    break
                }
            }
            #expect(refusal == .storage(path: directory, detail: "syncing LMDB failed: Input/output error"))
            #expect(throws: ImageStoreError.self) { try store.checkpoint() }
            failing.withLock { $0 = false }
            // Not retried later: the store still takes no writes, and reads go on.
            #expect(throws: ImageStoreError.self) { try store.put(Data([1]), for: "https://x.test/after") }
            for n in 0..<acknowledged { #expect(try store.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
            store.close()
            #expect(try !LogTest.segments(directory).isEmpty, "the log was kept for the next open")

            let reopened = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { reopened.close() }
            for n in 0..<acknowledged { #expect(try reopened.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
            try checkConsistency(of: reopened)
        }
    }


    @Test(arguments: [ENOSPC, EIO])
    func aPutThatThrowsAfterItsRecordReachedTheLogMayReappearAndTheErrorSaysSo(code: Int32) throws {
        try withTemporaryDirectory { directory throws in
            let faults = FaultyLogFileSystem()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(fileSystem: faults))
            try store.put(LogTest.smallEntry(0).data, for: LogTest.smallEntry(0).url)
            faults.writesWholeRecordsBeforeFailing.withLock { $0 = true }
            faults.fail(.write, with: code)
            #expect { try store.put(LogTest.smallEntry(1).data, for: LogTest.smallEntry(1).url) } throws: { error in
                "\(error)".contains("is unknown (the entry may be present after the store reopens)")
            }
            store.close()
            let reopened = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { reopened.close() }
            // The whole record was in the file, so recovery replays it: the documented contract.
            #expect(try reopened.get(LogTest.smallEntry(1).url)?.data == LogTest.smallEntry(1).data)
            #expect(try reopened.get(LogTest.smallEntry(0).url)?.data == LogTest.smallEntry(0).data)
        }
    }

}

import Synchronization
