import Foundation
import ImageStoreTestSupport
@testable import LMDB
import Synchronization
import Testing

/// A read transaction checks every buffer LMDB hands out against the pages in use, which it
/// reads from the newest meta page right after it begins. A writer commits meanwhile: that
/// meta page may be rewritten under the reader. Whatever the timing, an undamaged store never
/// reads as damaged.
@Suite struct ReadBoundsRaceTests {
    @Test func readersOfAGrowingStoreNeverSeeDamage() throws {
        try withTemporaryDirectory { directory throws in try race(in: directory) }
    }

    private func race(in directory: String) throws {
        var options = EnvironmentOptions()
        options.initialMapSize = 1 << 26
        options.maxMapSize = 1 << 30
        let environment = try Environment.open(path: directory, options: options)
        let db = try environment.openDatabase(named: "t")
        let free = Database(dbi: 0, name: "(free list)")
        let stop = Atomic<Bool>(false)
        let failures = Mutex<[String]>([])
        let reads = Atomic<Int>(0)
        let readers = (0..<2).map { _ in
            Thread {
                while !stop.load(ordering: .relaxed) {
                    do {
                        try environment.read { txn in
                            // The newest key lies on the newest pages; the free list is rewritten by every commit.
                            try txn.scan(free) { _, _ in true }
                            _ = try [UInt8](repeating: 0xFF, count: 1).withUnsafeBytes { last in
                                try txn.scan(db, from: last) { _, _ in false }
                            }
                            _ = try txn.get(db, key: [UInt8](repeating: 0, count: 8))
                        }
                        reads.add(1, ordering: .relaxed)
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
            }
        }
        readers.forEach { $0.start() }
        // Each commit adds pages at the end and frees others: the pages in use grow all the time.
        for round in 0..<3000 {
            try environment.write { txn in
                var key = UInt64(round).bigEndian
                let bytes = withUnsafeBytes(of: &key) { [UInt8]($0) }
                try txn.put(db, key: bytes, value: [UInt8](repeating: UInt8(truncatingIfNeeded: round), count: 5000))
                if round >= 8 {
                    var old = UInt64(round - 8).bigEndian
                    _ = try txn.delete(db, key: withUnsafeBytes(of: &old) { [UInt8]($0) })
                }
            }
        }
        stop.store(true, ordering: .relaxed)
        while readers.contains(where: { !$0.isFinished }) { usleep(1000) }
        #expect(reads.load(ordering: .relaxed) > 0)
        #expect(failures.withLock { $0 } == [], "an undamaged store read as damaged")
    }
}
