import Foundation
import ImageStore
import LMDB
import Synchronization

/// `get.long-reader`: get latency while one reader holds a snapshot for the whole measurement (an
/// export, a slow `forEachEntry` body) and a writer grows the store with 256 KiB images. With a
/// map that had to grow, every get queued behind the long reader; sized once, they never wait.
/// Per-get latency samples (batch 1), so p99 is one get's. The same gets on a quiet store are
/// the comparison row ("imgstore quiet"), so the ratio shows what the reader and writer cost.
enum LongReaderCases {
    static let all: [BenchmarkCase] = [BenchmarkCase(name: "get.long-reader") { o in
        [longReader(o, busy: true), longReader(o, busy: false)]
    }]

    static func longReader(_ options: BenchmarkOptions, busy: Bool) -> Measurement {
        let directory = options.scratch("long-reader")
        defer { options.removeScratch(directory) }
        var configuration = ImageStore.Configuration()
        configuration.validation = .none
        configuration.memoryCostLimit = 0  // every get reads LMDB
        configuration.sweepPeriod = nil
        let store: ImageStore
        let environment: Environment
        do {
            store = try ImageStore(path: directory + "/store", configuration: configuration)
            for n in 0..<1000 { try store.put(Data(repeating: UInt8(n & 0xFF), count: 4000 + n), for: "https://bench.test/\(n)", durability: .background) }
            try store.checkpoint()
            environment = try Environment.open(path: store.path)  // the store's own environment
        } catch { fail("get.long-reader setup: \(error)") }
        defer { store.close() }

        let release = DispatchSemaphore(value: 0)
        let stop = Atomic<Bool>(false)
        let grown = Atomic<Int>(0)
        let background = DispatchGroup()
        if busy {
            holdSnapshot(environment, group: background, until: release, label: "get.long-reader")
            DispatchQueue.global().async(group: background) {
                var n = 0
                let image = Data(repeating: 7, count: 256 << 10)
                while !stop.load(ordering: .relaxed) {
                    do { try store.put(image, for: "https://bench.test/grow/\(n)", durability: .background) } catch {
                        fail("get.long-reader: the growing writer failed: \(error)")
                    }
                    grown.add(1, ordering: .relaxed)
                    n += 1
                }
            }
        }
        let measurement = BenchmarkRunner.measure(
            "get.long-reader", system: busy ? "imgstore" : "imgstore quiet", threads: 1, opsPerThread: options.ops(20_000), batch: 1,
            repetitions: options.repetitions
        ) { _, range in
            var bytes = 0
            for i in range {
                let url = "https://bench.test/\(i % 1000)"
                do {
                    guard let image = try store.image(for: url) else { fail("get.long-reader: \(url) missing") }
                    bytes &+= image.data.count
                } catch {
                    fail("get.long-reader: \(url): \(error)")
                }
            }
            return bytes
        }
        stop.store(true, ordering: .relaxed)
        if busy {
            release.signal()
            background.wait()
            let images = grown.load(ordering: .relaxed)
            FileHandle.standardError.write(Data("  get.long-reader: the store grew by \(images) images (\(images / 4) MiB) under the long reader\n".utf8))
        }
        return measurement
    }
}
