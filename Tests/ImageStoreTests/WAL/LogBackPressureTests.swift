import Foundation
import Locking
import Synchronization
@testable import ImageStore
import ImageStoreTestSupport
import Testing

/// Writers waiting for the applier: what they are told when it cannot go on, and what the
/// store promises before it acknowledges a put.
@Suite struct LogBackPressureTests {
    @Test func freePagesPinnedByAReaderAreNotCountedAndNoWriterHangs() throws {
        try withTemporaryDirectory { directory throws in
            var configuration = LogTest.configuration()
            configuration.initialMapSize = 4 << 20
            configuration.maxMapSize = 4 << 20
            configuration.maxUnappliedBytes = 256 << 10
            configuration.logSegmentBytes = 1 << 20
            let store = try ImageStore(path: directory, configuration: configuration)
            defer { store.close() }
            let image = Data((0..<(100 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            for n in 0..<25 { try store.put(image, for: "https://x.test/old/\(n)") }
            try store.checkpoint()

            // A reader's snapshot (in another process, as a read-only opener's would be) pins
            // the pages the removal frees: LMDB cannot reuse them while it lasts.
            let reader = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-reader", directory])
            defer { _ = reader.kill() }
            #expect(reader.wait(for: "ready"))
            try store.removeAll()
            try store.checkpoint()

            let acknowledged = LockedValue<[String]>([])
            let refused = LockedValue<[String]>([])
            let writers = startThreads(6) { thread in
                for n in 0..<10 {
                    let url = "https://x.test/new/\(thread)/\(n)"
                    do {
                        try store.put(image, for: url)
                        acknowledged.withLock { $0.append(url) }
                    } catch {
                        refused.withLock { $0.append("\(error)") }
                        return
                    }
                }
            }
            // A safety net, not a measurement: a hung writer would hang the suite.
            let finished = writers.wait(timeout: .now() + 120) == .success
            try #require(finished, "writers parked in back-pressure never woke")
            // Every acknowledged put was appliable: the applier never failed.
            #expect(store.writes?.applier.failure == nil)
            #expect(!refused.withLock { $0 }.isEmpty, "the map is full for new pages; some puts are refused")
            for url in acknowledged.withLock({ $0 }) { #expect(try store.get(url)?.data == image, "\(url)") }
        }
    }

    /// A put that finds the map estimate too small waits for the applier and measures again.
    /// A batch applied between that measurement and its recording must not be undone by it:
    /// the older figure counts room the batch has used, and a put admitted on it would be
    /// acknowledged and then not fit in the map. Here the hook tries to apply a put of more
    /// than half the map in that window; of the two puts only one fits, and whichever is
    /// acknowledged must be applied. (Measured off the writer queue, both were acknowledged
    /// and the applier failed, map full, 3 runs of 3.)
    @Test func aBatchAppliedWhileARefusedPutMeasuresIsNotUndoneByItsMeasurement() throws {
        try withTemporaryDirectory { directory throws in
            let armed = Mutex(true)
            let window = LockedValue<(@Sendable () -> Void)?>(nil)
            var configuration = LogTest.configuration()
            configuration.initialMapSize = 4 << 20
            configuration.maxMapSize = 4 << 20
            configuration.logSegmentBytes = 8 << 20
            configuration.admissionWillRecordMeasurement = {
                // The first call only: the window's own put must not open another.
                let first = armed.withLock { (armed: inout Bool) -> Bool in defer { armed = false }; return armed }
                if first { window.withLock { $0 }?() }
            }
            let store = try ImageStore(path: directory, configuration: configuration)
            defer { store.close() }
            let writes = try #require(store.writes)
            let free = try writes.tier.mapRoom().tail
            let first = Data(repeating: 0xA1, count: free * 6 / 10)
            let second = Data(repeating: 0xB2, count: free * 6 / 10)
            #expect(MapSpace.need(putting: first.count) <= free, "each put fits in the map alone")
            // Set on the writer queue: a window found running there needs no wait, since no batch can
            // be applied while it runs (the fixed code); elsewhere (the old code) one could.
            let onWriterQueue = DispatchSpecificKey<Bool>()
            writes.tier.writer.setSpecific(key: onWriterQueue, value: true)

            let outcomes = LockedValue<[String: String]>([:])
            @Sendable func put(_ data: Data, as name: String) {
                do {
                    try store.put(data, for: "https://x.test/\(name)")
                    outcomes.withLock { $0[name] = "acknowledged" }
                } catch {
                    outcomes.withLock { $0[name] = "\(error)" }
                }
            }
            window.withLock {
                $0 = {
                    // The second put, from another thread; off the writer queue, give its batch up to
                    // 10 s to be applied (a safety net: it takes milliseconds).
                    let applied = writes.applier.appliedSequence
                    Thread.detachNewThread { put(second, as: "second") }
                    if DispatchQueue.getSpecific(key: onWriterQueue) == nil {
                        let deadline = Date() + 10
                        while writes.applier.appliedSequence == applied && Date() < deadline { usleep(1000) }
                    }
                }
            }
            // As a measurement taken while a reader pinned free pages would leave it: too small
            // for the first put, which then waits for the applier and measures again.
            writes.space.measured(.zero)
            put(first, as: "first")
            let deadline = Date() + 30
            while outcomes.withLock({ $0.count }) < 2 && Date() < deadline { usleep(1000) }
            let settled = outcomes.withLock { $0 }
            try #require(settled.count == 2, "both puts returned: \(settled)")
            #expect(throws: Never.self, "applying what was acknowledged") { try writes.settle() }
            #expect(writes.applier.failure == nil, "an acknowledged put could not be applied: \(settled)")
            let acknowledged = settled.filter { $0.value == "acknowledged" }.keys.sorted()
            #expect(acknowledged.count == 1, "only one of the two fits: \(settled)")
            for name in acknowledged {
                #expect(try store.get("https://x.test/\(name)")?.data == (name == "first" ? first : second), "\(name)")
            }
        }
    }
}
