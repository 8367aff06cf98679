import Foundation
import Locking
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

}
