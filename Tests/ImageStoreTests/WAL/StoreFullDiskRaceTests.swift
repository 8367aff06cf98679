import Foundation
import ImageStore
import ImageStoreTestSupport
import Synchronization
import Testing

/// Puts racing for the last room on a small disk: each is applied, or refused before anything
/// is written; none is acknowledged that the store then cannot apply.
@Suite struct StoreFullDiskRaceTests {
    private static let threads = 8
    private static let putsPerThread = 30

    /// What the racing puts ended with.
    private struct Outcomes {
        var acknowledged: [String: Data] = [:]
        var refused: [String] = []
        /// Errors other than `noRoomForWrite`, as "url: error".
        var failures: [String] = []
    }

    /// Failed before: the disk check and the map reservation were two steps, so puts racing on
    /// a nearly full disk each passed the check before any reserved its room; their apply then
    /// failed for want of space and the store stopped taking writes.
    @Test(.enabled(if: TemporaryMount.isAvailable, TemporaryMount.unavailableReason))
    func putsRacingForTheLastRoomAreEachAppliedOrRefusedWithNothingWritten() throws {
        try withTemporaryDirectory { directory throws in
            let mount = directory + "/mnt"
            try TemporaryMount.tmpfs(at: mount, size: "8m") {
                let path = mount + "/store"
                var configuration = makeConfiguration()
                configuration.logSegmentBytes = 256 << 10
                let outcomes = Mutex(Outcomes())
                do {
                    let store = try ImageStore(path: path, configuration: configuration)
                    defer { store.close() }
                    startThreads(Self.threads) { thread in
                        var generator = SeededGenerator(seed: UInt64(100 + thread))
                        for n in 0..<Self.putsPerThread {
                            let url = "https://race.test/\(thread)-\(n)"
                            let data = generator.bytes(150_000)
                            do {
                                try store.put(data, for: url)
                                outcomes.withLock { $0.acknowledged[url] = data }
                            } catch {
                                if case .noRoomForWrite = error as? ImageStoreError {
                                    outcomes.withLock { $0.refused.append(url) }
                                } else {
                                    outcomes.withLock { $0.failures.append("\(url): \(error)") }
                                }
                            }
                        }
                    }.wait()
                    let seen = outcomes.withLock { $0 }
                    #expect(seen.failures.isEmpty, "\(seen.failures.count) put(s) failed otherwise: \(seen.failures.prefix(3))")
                    #expect(!seen.refused.isEmpty, "the disk never filled")
                    #expect(seen.acknowledged.count >= 10)
                    try store.checkpoint()  // every acknowledged put is applied
                    try check(store, seen)
                }
                let seen = outcomes.withLock { $0 }
                let store = try ImageStore(path: path, configuration: configuration)
                defer { store.close() }
                #expect(store.recoveryReport.recordsReplayed == 0, "close applied everything")
                try check(store, seen)
                // Still writable once space is freed.
                for url in seen.acknowledged.keys.sorted().prefix(5) { #expect(try store.remove(url)) }
                try store.checkpoint()
                var generator = SeededGenerator(seed: 99)
                let data = generator.bytes(150_000)
                try store.put(data, for: "https://race.test/after")
                try store.checkpoint()
                #expect(try store.image(for: "https://race.test/after")?.data == data)
                try checkConsistency(of: store)
            }
        }
    }

    /// Every acknowledged put reads back whole; no refused one left anything.
    private func check(_ store: ImageStore, _ seen: Outcomes) throws {
        for (url, data) in seen.acknowledged { #expect(try store.image(for: url)?.data == data, "\(url)") }
        for url in seen.refused { #expect(try store.info(for: url) == nil, "refused \(url) was written") }
        try checkConsistency(of: store)
    }
}
