import Foundation
import ImageStore
import LMDB
import Synchronization

/// `get.memory-hit.busy`, `get.disk-hit.busy`: the read cases again while a writer puts into the same store, and
/// while, besides, a long reader holds one snapshot for the whole measurement. Readers never wait for writers, so
/// throughput and p99 (per get: batch 1) should stay near the quiet rows (the base of the ratios).
///
/// The writer overwrites 256 URLs of its own in turn (`.background` durability, the default image mix), so the memory
/// tier's hot entries are never invalidated and the store does not grow without bound.
enum BusyReadCases {
    static let all: [BenchmarkCase] = [
        BenchmarkCase(name: "get.memory-hit.busy") { o in busy("get.memory-hit.busy", o, ops: o.ops(200_000), StoreCases.memoryHitLoop) },
        BenchmarkCase(name: "get.disk-hit.busy") { o in busy("get.disk-hit.busy", o, ops: o.ops(20_000), StoreCases.diskHitLoop) },
    ]

    /// What runs beside the measured gets.
    enum Load: CaseIterable {
        case quiet, writer, writerAndLongReader

        var system: String {
            switch self {
            case .quiet: "imgstore quiet"
            case .writer: "imgstore +writer"
            case .writerAndLongReader: "imgstore +writer +long reader"
            }
        }
    }

    static func busy(
        _ name: String, _ options: BenchmarkOptions, ops: Int,
        _ loop: (ReadFixture, any StoreSystem) -> @Sendable (Int, Range<Int>) -> Int
    ) -> [Measurement] {
        let fixture = ReadFixture.shared(options)
        let body = loop(fixture, fixture.imgstore)
        return [1, 2].flatMap { threads in
            Load.allCases.map { load in
                let background = Background(fixture: fixture, load: load)
                defer { background.stop() }
                return BenchmarkRunner.measure(
                    name, system: load.system, threads: threads, opsPerThread: ops, batch: 1,
                    repetitions: options.repetitions, body: body)
            }
        }
    }

    /// The writer thread and the long reader of one measurement; `stop()` ends both and waits for them.
    final class Background: Sendable {
        let stopping = Atomic<Bool>(false)
        let group = DispatchGroup()
        let release = DispatchSemaphore(value: 0)
        let holdsReader: Bool

        init(fixture: ReadFixture, load: Load) {
            holdsReader = load == .writerAndLongReader
            guard load != .quiet else { return }
            let store = fixture.imgstore.store
            if holdsReader {
                let environment: Environment
                do { environment = try Environment.open(path: store.path) } catch { fail("\(load.system): \(error)") }
                holdSnapshot(environment, group: group, until: release, label: load.system)
            }
            let set = fixture.set
            DispatchQueue.global().async(group: group) { [self] in
                var n = 0
                while !stopping.load(ordering: .relaxed) {
                    let url = "https://cdn.example.com/busy/\(n % 256).jpg"
                    do { try store.put(set.images[n % set.count], for: url, durability: .background) } catch {
                        fail("\(load.system): the writer failed: \(error)")
                    }
                    n += 1
                }
            }
        }

        func stop() {
            stopping.store(true, ordering: .relaxed)
            if holdsReader { release.signal() }
            group.wait()
        }
    }
}

/// Begins a read transaction on `environment` on a thread of `group` and holds it (one snapshot, pinning its pages)
/// until `release` is signalled; returns once the snapshot is held.
func holdSnapshot(_ environment: Environment, group: DispatchGroup, until release: DispatchSemaphore, label: String) {
    let holding = DispatchSemaphore(value: 0)
    DispatchQueue.global().async(group: group) {
        do {
            try environment.read { _ in
                holding.signal()
                release.wait()
            }
        } catch { fail("\(label): the long reader could not begin: \(error)") }
    }
    holding.wait()
}
