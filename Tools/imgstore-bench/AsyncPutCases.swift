import Foundation
import ImageStore

/// The `async` put path (`store.async.put`, suspending tasks resumed by the log's leader thread)
/// against the synchronous one (`store.put` on threads), both `.sync`, at 16 writers: issue 16
/// asks for the async path within 10 % of the synchronous one. The async row comes first, so
/// the report's ratio is async ÷ sync.
enum AsyncPutCases {
    static let writers = 16

    static let all: [BenchmarkCase] = [
        BenchmarkCase(name: "put.async") { o in puts(o) }
    ]

    /// Each path's median of `options.widerRounds` runs (five; one with `--quick`), in rotating rounds (as the other
    /// put cases). Five, not the other put cases' three: under a competing build, one path's three runs spread
    /// 1 285–2 176 puts/s, and three `--cases put.async` runs under the same load gave async ÷ sync medians of 0.78,
    /// 1.23 and 1.10.
    static func puts(_ options: BenchmarkOptions) -> [Measurement] {
        let set = Workloads.mix(options)
        let perWriter = set.count / writers
        return BenchmarkRunner.medianOfRotatingRounds(
            "put.async \(writers) writers", systems: ["imgstore-async", "imgstore"], named: { $0 },
            rounds: options.widerRounds
        ) { system in
            let directory = options.scratch("put.async-\(system)")
            let store: ImageStore
            do { store = try ImageStore(path: directory) } catch { fail("open \(directory): \(error)") }
            let isAsync = system == "imgstore-async"
            // Async: each writer is one task doing its puts in turn; its thread only waits for it.
            var m = BenchmarkRunner.measureOnce(
                "put.async", system: system, threads: writers, opsPerThread: perWriter, batch: isAsync ? perWriter : 1,
                warmUp: false, finish: { settle(store) }
            ) { t, range in
                let indices = range.map { $0 * writers + t }
                if isAsync {
                    let done = DispatchSemaphore(value: 0)
                    Task {
                        for i in indices {
                            do { try await store.async.put(set.images[i], for: set.urls[i], durability: .sync) } catch {
                                fail("imgstore async put \(set.urls[i]): \(error)")
                            }
                        }
                        done.signal()
                    }
                    done.wait()
                } else {
                    for i in indices {
                        do { try store.put(set.images[i], for: set.urls[i], durability: .sync) } catch {
                            fail("imgstore put \(set.urls[i]): \(error)")
                        }
                    }
                }
                return indices.reduce(0) { $0 + set.images[$1].count }
            }
            m.system = system
            reportGroupCommits(store, system)
            store.close()
            options.removeScratch(directory)
            return m
        }
    }

    /// Returns once every acknowledged put is applied to LMDB (as `ImgStoreSystem.finish`).
    private static func settle(_ store: ImageStore) {
        do { _ = try store.statistics() } catch { fail("imgstore statistics: \(error)") }
    }
}
