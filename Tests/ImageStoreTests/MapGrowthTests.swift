import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Synchronization
import Testing

@Suite struct MapGrowthTests {
    @Test func theMapGrowsFromTinyToWellPastItWhileReadersKeepReading() throws {
        let initial = 256 << 10
        try withTemporaryStore(makeConfiguration(initialMapSize: initial, maxMapSize: 1 << 30)) { store in
            let anchor = Data((0..<10_000).map { UInt8($0 % 251) })
            try store.put(anchor, for: "https://x.test/anchor")
            let stop = Atomic<Bool>(false)
            let reads = Atomic<Int>(0)
            let failures = Atomic<Int>(0)
            let group = startThreads(4) { _ in
                while !stop.load(ordering: .relaxed) {
                    let ok = (try? store.get("https://x.test/anchor"))??.data == anchor
                    if !ok { failures.add(1, ordering: .relaxed) }
                    reads.add(1, ordering: .relaxed)
            }
            }
            var random = SeededGenerator(seed: 42)
            for n in 0..<60 { try store.put(random.bytes(256 << 10), for: "https://x.test/big/\(n)") }
            stop.store(true, ordering: .relaxed)
            group.wait()
            let stats = try store.statistics()
            #expect(stats.mapSize >= 16 * initial, "grew from \(initial) to \(stats.mapSize)")
            #expect(stats.entryCount == 61)
            #expect(failures.load(ordering: .relaxed) == 0)
            #expect(reads.load(ordering: .relaxed) > 0)
        }
    }

    @Test func pastTheMaximumAPutFailsWithStoreFullAndTheStoreStaysUsable() throws {
        let maxMapSize = 2 << 20
        try withTemporaryStore(makeConfiguration(initialMapSize: 256 << 10, maxMapSize: maxMapSize)) { store in
            var random = SeededGenerator(seed: 7)
            var stored: [Int: Data] = [:]
            var full = false
            for n in 0..<100 {
                let blob = random.bytes(100 << 10)
                do {
                    try store.put(blob, for: "https://x.test/\(n)")
                    stored[n] = blob
                } catch let error as ImageStoreError {
                    #expect(error == .storeFull(path: store.path, limit: maxMapSize))
                    #expect(error.description.contains("full"))
                    full = true
                    #expect(try store.get("https://x.test/\(n)") == nil, "the failed put left nothing behind")
                    break
                }
            }
            #expect(full, "the store filled up")
            #expect(stored.count > 5)
            for (n, blob) in stored { #expect(try store.get("https://x.test/\(n)")?.data == blob) }
            #expect(try store.remove("https://x.test/0"))
            try store.put(Data([1, 2, 3]), for: "https://x.test/small-after-full")
            #expect(try store.get("https://x.test/small-after-full")?.data == Data([1, 2, 3]))
        }
    }

    /// An entry's bytes need a run of pages in a row (LMDB's overflow pages), which free pages
    /// scattered between other entries do not give: a put is admitted only with room for that
    /// run past the pages in use, so an acknowledged put is always applied.
    @Test func aPutLargerThanTheMapsUnusedEndIsRefusedEvenWithFreePagesScatteredEnough() throws {
        try withTemporaryStore(makeConfiguration(initialMapSize: 256 << 10, maxMapSize: 2 << 20)) { store in
            var random = SeededGenerator(seed: 5)
            var count = 0
            // Entries of two overflow pages each, until the map is full; then every other one
            // removed: free runs of a few pages, scattered, half the map in all.
            while true {
                do {
                    try store.put(random.bytes(5 << 10), for: "https://x.test/\(count)")
                    count += 1
                } catch ImageStoreError.storeFull {
                    break
                }
            }
            for n in stride(from: 0, to: count, by: 2) { #expect(try store.remove("https://x.test/\(n)")) }
            try store.checkpoint()
            try store.put(Data([1]), for: "https://x.test/after-removals")
            try store.checkpoint()  // the removals' pages reusable now
            let large = random.bytes(300 << 10)
            do {
                try store.put(large, for: "https://x.test/large")
                #expect(try store.get("https://x.test/large")?.data == large)
            } catch ImageStoreError.storeFull {
                // Refused before it was logged: nothing to apply.
            }
            #expect(throws: Never.self, "applying every acknowledged put") { try store.writes?.settle() }
            #expect(store.writes?.applier.failure == nil)
            try store.put(Data([2]), for: "https://x.test/small")
            #expect(try store.get("https://x.test/small")?.data == Data([2]))
        }
    }

    /// LMDB reuses no page the newest commit freed, and a checkpoint pins the newest snapshot:
    /// a removal from a store too full for any put must still make room for the next one.
    @Test func aRemovalFromAStoreTooFullForAnyPutMakesRoomForTheNext() throws {
        try withTemporaryStore(makeConfiguration(initialMapSize: 256 << 10, maxMapSize: 2 << 20)) { store in
            var random = SeededGenerator(seed: 11)
            var count = 0
            // Ever smaller puts, until not even one byte fits.
            for size in [100 << 10, 10 << 10, 1] {
                while true {
                    do {
                        try store.put(random.bytes(size), for: "https://x.test/\(count)")
                        count += 1
                    } catch ImageStoreError.storeFull {
                        break
                    }
                }
            }
            #expect(count > 10)
            #expect(try store.remove("https://x.test/0"))
            try store.put(Data([1, 2, 3]), for: "https://x.test/after-removal")
            #expect(try store.get("https://x.test/after-removal")?.data == Data([1, 2, 3]))
            #expect(try store.statistics().entryCount == count)
        }
    }
}
