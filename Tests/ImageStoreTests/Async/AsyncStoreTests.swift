import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Locking
import Testing

/// The `async` interface: every call that can wait, what it returns, and what cancellation
/// leaves behind.
@Suite struct AsyncStoreTests {
    static let image = Data((0..<(100 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 13) })

    /// Polls `condition` without blocking a cooperative thread (the pool may be two threads).
    func eventually(_ condition: () -> Bool) async throws {
        while !condition() { try await Task.sleep(for: .milliseconds(1)) }
    }

    // MARK: - Every call

    @Test func everyCallThatCanWaitHasAnAsyncFormThatDoesItsJob() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imgstore-async-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock()
        let store = try await ImageStore.open(path: directory, configuration: makeConfiguration(clock: clock))
        let url = "https://x.test/a"
        let info = try await store.async.put(Self.image, for: url, expiry: .after(.seconds(60)))
        #expect(info.byteCount == Self.image.count)
        #expect(try store.get(url)?.data == Self.image)
        try await store.async.put(Self.image, for: "https://x.test/b", durability: .batched(within: .milliseconds(20)))
        try await store.async.put(Self.image, for: "https://x.test/c", durability: .background)
        let refreshed = try await store.async.refresh(url, expiry: .never)
        #expect(refreshed?.expiresAt == nil)
        #expect(try await store.async.refresh("https://x.test/missing", expiry: .never) == nil)
        #expect(try await store.async.remove("https://x.test/b"))
        #expect(try await !store.async.remove("https://x.test/b"))
        try await store.async.checkpoint()
        let statistics = try await store.async.statistics()
        #expect(statistics.entryCount == 2)
        try await store.async.put(Self.image, for: "https://x.test/short", expiry: .after(.seconds(1)))
        clock.advance(by: 2)
        #expect(try await store.async.sweepExpired().entryCount == 1)
        #expect(try await store.async.verify().unrepaired.isEmpty)
        _ = try await store.async.compact()
        try await store.async.removeAll()
        #expect(try store.entries().isEmpty)
        await store.async.close()
        await #expect(throws: ImageStoreError.closed(path: directory)) { try await store.async.put(Self.image, for: url) }
    }

    @Test func asyncWritesThrowTheStoresErrors() async throws {
        try await withTemporaryStoreAsync { store in
            await #expect(throws: ImageStoreError.emptyData) { try await store.async.put(Data(), for: "https://x.test/e") }
            await #expect(throws: ImageStoreError.self) { try await store.async.put(Self.image, for: "not a url") }
        }
    }

    // MARK: - Cancellation

    @Test func aTaskCancelledWhileWaitingForDurabilityGetsCancellationErrorAndItsPutMayStillLand() async throws {
        let gate = GatedLogFileSystem()
        try await withTemporaryStoreAsync(LogTest.configuration(fileSystem: gate)) { store in
            gate.holdNextWrite()
            let url = "https://x.test/cancelled"
            let task = Task { try await store.async.put(Self.image, for: url, durability: .sync) }
            try await eventually { gate.isHeld }  // the leader is writing the record: the task waits for durability
            task.cancel()
            let outcome = await task.result  // before the release: the cancellation alone ends the wait
            gate.release()
            guard case .failure(let error) = outcome else {
                Issue.record("the cancelled put did not end with an error: \(outcome)")
                return
            }
            #expect(error is CancellationError, "\(error)")
            // It was queued before the cancellation: it is written and synced as usual.
            try await store.async.checkpoint()
            #expect(try store.get(url)?.data == Self.image)
        }
    }

    @Test func aTaskCancelledUnderBackPressureWritesNothing() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imgstore-async-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            var configuration = LogTest.configuration(applyLog: false)
            configuration.maxUnappliedBytes = 64 << 10
            let store = try ImageStore(path: directory, configuration: configuration)
            defer { store.abandonForTesting() }
            try store.put(Self.image, for: "https://x.test/first")  // nothing is ever applied: the next put waits
            let url = "https://x.test/held"
            let task = Task { try await store.async.put(Self.image, for: url) }
            // Until the task parks, cancelling it is still the same test: it must not write.
            try await eventually { store.writes?.log.withLock { !store.writes!.log.state.suspended.isEmpty } ?? false }
            task.cancel()
            guard case .failure(let error) = await task.result else {
                Issue.record("the cancelled put did not end with an error")
                return
            }
            #expect(error is CancellationError, "\(error)")
            #expect(try store.get(url) == nil)
            #expect(store.logStatus?.nextSequence == 2, "only the first put was logged")
        }
    }
}

/// `withTemporaryStore` for async bodies.
func withTemporaryStoreAsync(_ configuration: ImageStore.Configuration = makeConfiguration(),
                             _ body: (ImageStore) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imgstore-async-\(UUID().uuidString)").path
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let store = try await ImageStore.open(path: directory + "/store", configuration: configuration)
    try await body(store)
    try checkConsistency(of: store)
    await store.async.close()
}
