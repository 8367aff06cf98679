import Foundation
import ImageStore
import LMDB
import Synchronization

/// `get.long-reader`: get latency while one reader holds a snapshot for the whole measurement (an
/// export, a slow `forEachEntry` body) and a writer grows the store with 256 KiB images. With a
/// map that had to grow, every get queued behind the long reader; sized once, they never wait.
enum LongReaderCases {
    static let all: [BenchmarkCase] = [BenchmarkCase(name: "get.long-reader") { o in [longReader(o)] }]

    static func longReader(_ options: BenchmarkOptions) -> Measurement {
        let directory = options.scratch("long-reader")
        defer { options.removeScratch(directory) }
        var configuration = ImageStore.Configuration()
        configuration.validation = .none
        configuration.memoryCostLimit = 0  // every get reads LMDB
        configuration.sweepInterval = nil
        let store: ImageStore
        let environment: Environment
        do {
            store = try ImageStore(path: directory + "/store", configuration: configuration)
            for n in 0..<1000 { try store.put(Data(repeating: UInt8(n & 0xFF), count: 4000 + n), for: "https://bench.test/\(n)", durability: .none) }
            try store.checkpoint()
            environment = try Environment.open(path: store.path)  // the store's own environment
        } catch { fail("get.long-reader setup: \(error)") }
        defer { store.close() }

        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let stop = Atomic<Bool>(false)
        let background = DispatchGroup()
        DispatchQueue.global().async(group: background) {
            _ = try? environment.read { _ in
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
        DispatchQueue.global().async(group: background) {
            var n = 0
            let image = Data(repeating: 7, count: 256 << 10)
            while !stop.load(ordering: .relaxed) {
                _ = try? store.put(image, for: "https://bench.test/grow/\(n)", durability: .none)
                n += 1
            }
        }
        let measurement = BenchmarkRunner.measure(
            "get.long-reader", system: "imgstore", threads: 1, opsPerThread: options.ops(20_000), batch: 1,
            repetitions: options.repetitions
        ) { _, range in
            var bytes = 0
            for i in range {
                guard let image = try? store.get("https://bench.test/\(i % 1000)") else { fail("get.long-reader: entry \(i % 1000) missing") }
                bytes &+= image.data.count
            }
            return bytes
        }
        stop.store(true, ordering: .relaxed)
        release.signal()
        background.wait()
        return measurement
    }
}
