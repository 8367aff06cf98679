import Foundation
import ImageStore
import ImageStoreTestSupport
import LMDB
import Locking
import Synchronization
import Testing

/// "Readers never wait for writers": not behind a growing store, not behind one long reader,
/// and a read nested in `forEachEntry` never deadlocks. Waits are bounded only to turn a hang
/// into a failure; nothing here measures time.
@Suite(.serialized) struct ReadersNeverWaitTests {
    @Test func everyPublicReadNestedInForEachEntryWhileTheStoreGrowsFinishes() throws {
        try withTemporaryDirectory { directory in
            // In a child process: a deadlock there fails this test instead of stopping the run.
            let child = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["nested-reads", directory + "/store", "3"])
            let status = child.waitForExit(timeout: 120)
            let output = child.kill()
            #expect(status == 0, "the child ended with \(status.map(String.init) ?? "a hang") after: \(output.split(separator: "\n").last ?? "nothing")")
            #expect(output.contains("done"))
        }
    }

    @Test func getsAndCheckpointsGoOnWhileALongReaderHoldsASnapshotAndTheStoreGrows() throws {
        var configuration = makeConfiguration(initialMapSize: 256 << 10, maxMapSize: 1 << 30)
        configuration.memoryCostLimit = 0  // every get reads LMDB
        try withTemporaryStore(configuration) { store in
            var random = SeededGenerator(seed: 5)
            let anchors = (0..<20).map { (url: "https://x.test/anchor/\($0)", data: random.bytes(3000)) }
            for anchor in anchors { try store.put(anchor.data, for: anchor.url) }
            try store.checkpoint()
            let environment = try Environment.open(path: store.path)  // the store's own environment

            let holding = DispatchSemaphore(value: 0)
            let release = DispatchSemaphore(value: 0)
            let reader = startThreads(1) { _ in
                try? environment.read { _ in
                    holding.signal()
                    release.wait()
                }
            }
            defer { release.signal(); reader.wait() }
            holding.wait()

            let applied = DispatchSemaphore(value: 0)
            let writerFailure = LockedBox<String?>(nil)
            let writer = startThreads(1) { _ in
                var random = SeededGenerator(seed: 6)
                do {
                    for n in 0..<40 { try store.put(random.bytes(256 << 10), for: "https://x.test/big/\(n)", durability: .none) }
                    try store.checkpoint()  // every put applied to LMDB and synced
                } catch { writerFailure.set("\(error)") }
                applied.signal()
            }
            let stop = Atomic<Bool>(false)
            let reads = Atomic<Int>(0)
            let wrong = Atomic<Int>(0)
            let readers = startThreads(2) { t in
                var n = t
                while !stop.load(ordering: .relaxed) {
                    let anchor = anchors[n % anchors.count]
                    if (try? store.get(anchor.url))??.data != anchor.data { wrong.add(1, ordering: .relaxed) }
                    reads.add(1, ordering: .relaxed)
                    n += 1
                }
            }
            let finished = applied.wait(timeout: .now() + 120) == .success
            #expect(finished, "the writes were applied while the long reader held its snapshot")
            stop.store(true, ordering: .relaxed)
            let readersDone = readers.wait(timeout: .now() + 60) == .success
            #expect(readersDone, "every get returned while the long reader held its snapshot")
            release.signal()
            writer.wait()
            readers.wait()
            #expect(writerFailure.get() == nil)
            #expect(wrong.load(ordering: .relaxed) == 0)
            #expect(reads.load(ordering: .relaxed) > 0)
            #expect(try store.statistics().entryCount == 60)
        }
    }

    @Test func forEachEntryReadsInPagesAndSeesEveryEntryOnceInKeyOrder() throws {
        try withTemporaryStore { store in
            var random = SeededGenerator(seed: 8)
            for n in 0..<57 { try store.put(random.bytes(100 + n), for: "https://x.test/page/\(n)") }
            for pageSize in [1, 2, 7, 56, 57, 58, 1000] {
                var seen: [String] = []
                try store.forEachEntry(pageSize: pageSize) { seen.append($0.url) }
                #expect(seen.count == 57 && Set(seen).count == 57, "page size \(pageSize)")
            }
            // A body that removes what it visits: each entry is still visited exactly once.
            var visited: [String] = []
            try store.forEachEntry(pageSize: 5) { (info) throws(ImageStoreError) in
                visited.append(info.url)
                _ = try store.remove(info.url)
            }
            #expect(visited.count == 57 && Set(visited).count == 57)
            #expect(try store.entries().isEmpty)
        }
    }
}

/// A value a background thread sets and the test reads.
private final class LockedBox<Value: Sendable>: Sendable {
    private let value: LockedValue<Value>
    init(_ value: Value) { self.value = LockedValue(value) }
    func set(_ newValue: Value) { value.withLock { $0 = newValue } }
    func get() -> Value { value.withLock { $0 } }
}
