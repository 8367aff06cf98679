import Foundation
import ImageStore
import ImageStoreTestSupport
import Locking
import Testing

/// The event seam: background work that fails, recovers, evicts or compacts tells the
/// configured handler (`Configuration.eventHandler`).
@Suite struct EventTests {
    /// Collects what a store reports.
    final class Recorder: Sendable {
        private let events = LockedValue<[StoreEvent]>([])
        var all: [StoreEvent] { events.withLock { $0 } }
        var handler: @Sendable (StoreEvent) -> Void { { event in self.events.withLock { $0.append(event) } } }

        func failures(_ task: StoreEvent.BackgroundTask) -> [any Error] {
            all.compactMap { if case let .backgroundFailure(t, error) = $0, t == task { error } else { nil } }
        }
    }

    /// A store with small log segments whose checkpoints fail (LMDB's sync) while `failing` is set.
    static func storeWithFailingCheckpoints(at directory: String, reportingTo recorder: Recorder) throws
        -> (ImageStore, LockedValue<Bool>) {
        let failing = LockedValue(false)
        var configuration = LogTest.configuration()
        configuration.eventHandler = recorder.handler
        configuration.checkpointSyncFault = {
            failing.withLock { $0 } ? .storage(path: directory, detail: "syncing LMDB failed: Input/output error") : nil
        }
        return (try ImageStore(path: directory, configuration: configuration), failing)
    }

    // MARK: - Background failures

    @Test func aFailingBackgroundCheckpointReachesTheHandler() throws {
        try withTemporaryDirectory { directory in
            let recorder = Recorder()
            let (store, failing) = try Self.storeWithFailingCheckpoints(at: directory, reportingTo: recorder)
            failing.withLock { $0 = true }
            // Small segments roll; the checkpoint after the first full one fails in the background.
            var refused = false
            for n in 0..<400 where !refused {
                do { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url) } catch { refused = true }
            }
            #expect(refused, "the failed checkpoint stopped writes")
            store.drainEventsForTesting()
            let failures = recorder.failures(.checkpoint)
            #expect(failures.count == 1)
            #expect(failures.first as? ImageStoreError == .storage(path: directory, detail: "syncing LMDB failed: Input/output error"))
            #expect(recorder.failures(.applying).count == 1, "the applier's stop is reported too")
            let metrics = store.metrics
            #expect(metrics.checkpointFailures == 1)
            #expect(metrics.backgroundFailures[.checkpoint] == 1)
            #expect(metrics.lastBackgroundFailure?.description.contains("Input/output error") == true)
            failing.withLock { $0 = false }
            store.close()
        }
    }

    @Test func aCheckpointThatFailsOnCloseReachesTheHandlerBeforeCloseReturns() throws {
        try withTemporaryDirectory { directory in
            let recorder = Recorder()
            let (store, failing) = try Self.storeWithFailingCheckpoints(at: directory, reportingTo: recorder)
            try store.put(LogTest.smallEntry(1).data, for: LogTest.smallEntry(1).url)
            failing.withLock { $0 = true }
            store.close()
            #expect(recorder.failures(.closing).count == 1)
        }
    }

    // MARK: - Recovery, evictions, compaction

    @Test func openingReportsTheRecoveryOfTheLog() throws {
        try withTemporaryDirectory { directory in
            try LogTest.makeCrashedStore(at: directory, count: 5)
            let recorder = Recorder()
            var configuration = LogTest.configuration()
            configuration.eventHandler = recorder.handler
            let store = try ImageStore(path: directory, configuration: configuration)
            store.drainEventsForTesting()
            let reports = recorder.all.compactMap { if case let .recovered(report) = $0 { report } else { nil } }
            #expect(reports == [store.recoveryReport])
            #expect(reports.first?.recordsReplayed == 5)
            store.close()
        }
    }

    @Test func aSweepReportsItsEvictionsAsOneBatch() throws {
        let clock = ManualClock()
        let recorder = Recorder()
        var configuration = makeConfiguration(clock: clock)
        configuration.eventHandler = recorder.handler
        try withTemporaryStore(configuration) { store in
            for n in 0..<3 { try store.put(Data(repeating: UInt8(n), count: 100), for: "https://x.test/\(n)", expiry: .after(.seconds(10))) }
            clock.advance(by: 11)
            let report = try store.sweepExpired()
            store.drainEventsForTesting()
            let batches = recorder.all.compactMap { event -> (StoreEvent.EvictionReason, Int, Int)? in
                if case let .evicted(reason, entries, bytes) = event { (reason, entries, bytes) } else { nil }
            }
            #expect(batches.count == 1)
            #expect(batches.first?.0 == .expired && batches.first?.1 == 3 && batches.first?.2 == 300)
            #expect(report.entries == 3)
            #expect(store.metrics.evictions[.expired] == 3)
        }
    }

    @Test func aCompactionIsReported() throws {
        let recorder = Recorder()
        var configuration = makeConfiguration()
        configuration.eventHandler = recorder.handler
        try withTemporaryStore(configuration) { store in
            try store.put(Data(repeating: 1, count: 1000), for: "https://x.test/a")
            let report = try store.compact()
            store.drainEventsForTesting()
            let compactions = recorder.all.compactMap { if case let .compacted(report) = $0 { report } else { nil } }
            #expect(compactions == [report])
        }
    }

    @Test func everyEventHasASeverityAndASentence() {
        let events: [StoreEvent] = [
            .backgroundFailure(.sweep, error: ImageStoreError.closed(path: "/s")), .recovered(RecoveryReport()),
            .quarantined(entries: 2), .waitedForWriterLock(for: .milliseconds(20)), .evicted(.budget, entries: 1, bytes: 10),
        ]
        #expect(events.map(\.severity) == [.error, .info, .warning, .info, .info])
        #expect(events.allSatisfy { $0.description.hasPrefix("imgstore ") })
    }
}
