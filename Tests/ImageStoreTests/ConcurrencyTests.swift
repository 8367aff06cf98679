import Foundation
import ImageStore
import ImageStoreTestSupport
import Locking
import Synchronization
import Testing

@Suite struct ConcurrencyTests {
    /// Version `v` of key `k`: its bytes say which version they are, so a reader can tell a
    /// whole version from a torn one.
    private static func blob(key: Int, version: Int) -> Data {
        var data = Data(count: 1000 + (key * 37 + version * 101) % 3000)
        data.withUnsafeMutableBytes { bytes in
            for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: key &* 31 &+ version &* 7 &+ i) }
        }
        return data
    }

    @Test func manyThreadsReadWhileOneWrites() throws {
        try withTemporaryStore { store throws in
            let keys = 50
            for k in 0..<keys { try store.put(Self.blob(key: k, version: 0), for: "https://x.test/\(k)") }
            let done = Atomic<Bool>(false)
            let torn = Atomic<Int>(0)
            let reads = Atomic<Int>(0)
            let failedReads = LockedValue<[String]>([])  // a miss or an error: every key is always present
            let group = startThreads(6) { reader in
                var k = reader
                while !done.load(ordering: .relaxed) {
                    k = (k + 7) % keys
                    let image: StoredImage
                    do {
                        guard let found = try store.get("https://x.test/\(k)") else {
                            failedReads.withLock { $0.append("key \(k) missing") }
                            continue
                        }
                        image = found
                    } catch {
                        failedReads.withLock { $0.append("key \(k): \(error)") }
                        continue
                    }
                    let whole = (0...40).contains { Self.blob(key: k, version: $0) == image.data }
                    if !whole { torn.add(1, ordering: .relaxed) }
                    reads.add(1, ordering: .relaxed)
                }
            }
            for version in 1...40 {
                for k in stride(from: version % 5, to: keys, by: 5) {
                    try store.put(Self.blob(key: k, version: version), for: "https://x.test/\(k)")
                }
            }
            done.store(true, ordering: .relaxed)
            group.wait()
            #expect(torn.load(ordering: .relaxed) == 0)
            #expect(failedReads.withLock { $0 } == [])
            #expect(reads.load(ordering: .relaxed) > 100)
        }
    }

    @Test func manyThreadsWriteAtOnce() throws {
        try withTemporaryStore { store throws in
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for n in 0..<25 {
                    try! store.put(Self.blob(key: thread * 100 + n, version: 1), for: "https://x.test/\(thread)/\(n)")
                }
            }
            #expect(try store.statistics().entryCount == 200)
            for thread in 0..<8 {
                for n in 0..<25 {
                    #expect(try store.get("https://x.test/\(thread)/\(n)")?.data == Self.blob(key: thread * 100 + n, version: 1))
                }
            }
        }
    }
}
