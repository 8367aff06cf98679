import Foundation
import ImageStore
import LMDB

/// What the writer's structure check costs (`Transaction.checkStructure`: LMDB's free list and every branch and leaf
/// page of the store's trees, run at every writable open and in `verify`), on a store of 100 000 entries (10 000 in
/// `--quick`). imgstore only. Rows: the check alone (one read transaction), a whole writable open and close (which
/// runs it), and a read-only open and close (which does not). Each row is the fastest of at least three runs.
enum StructureCheckCases {
    static let all: [BenchmarkCase] = [BenchmarkCase(name: "open.check") { o in checks(o) }]

    /// The store's databases, in the order the store opens them (`StoreFormat.swift`).
    static let databaseNames = ["meta", "entries", "blobs", "expiry", "access", "quarantine"]

    static func checks(_ options: BenchmarkOptions) -> [Measurement] {
        let size = options.quick ? 10_000 : 100_000
        // Small payloads: the check's cost is per page of the trees, and overflow pages are not read.
        let payload = ImageCorpus.ladders[.jpeg]![0]
        var configuration = ImageStore.Configuration()
        configuration.validation = .none
        configuration.sweepPeriod = nil
        let directory = options.scratch("open-check")
        defer { options.removeScratch(directory) }
        do {
            let store = try ImageStore(path: directory, configuration: configuration)
            for key in 0..<size {
                try store.put(payload, for: "https://cdn.example.com/img/\(key).jpg", durability: .background)
                // Settle now and then: filling far ahead of the applier slows puts down more and more.
                if key % 1_000 == 999 { _ = try store.statistics() }
            }
            store.close()
        } catch { fail("open.check fill: \(error)") }

        func fastest(_ name: String, _ body: () throws -> Void) -> Measurement {
            var best = Double.infinity
            for _ in 0..<max(3, options.repetitions) {
                let t0 = BenchmarkRunner.nanoseconds()
                do { try body() } catch { fail("open.check \(name): \(error)") }
                best = min(best, Double(BenchmarkRunner.nanoseconds() - t0))
            }
            return Measurement(caseName: "open.check", system: "\(name), \(size / 1000)k entries", threads: 1, operations: 1,
                               bytes: 0, seconds: best / 1e9, latencies: [best], cpuSeconds: best / 1e9)
        }
        var rows: [Measurement] = []
        do {
            var lmdbOptions = EnvironmentOptions()
            lmdbOptions.readOnly = true
            let environment = try Environment.open(path: directory, options: lmdbOptions)
            let databases = try environment.read { txn in
                try databaseNames.map { try txn.openDatabase(named: $0, create: false) }
            }
            let pages = try environment.read { txn in try databases.map { try txn.statistics($0) }.reduce(0) { $0 + $1.branchPages + $1.leafPages } }
            FileHandle.standardError.write(Data("  open.check: \(pages) branch and leaf pages in the store's trees\n".utf8))
            rows.append(fastest("checkStructure") { try environment.read { txn in try txn.checkStructure(of: databases) } })
        } catch { fail("open.check: \(error)") }
        rows.append(fastest("writable open + close") { try ImageStore(path: directory, configuration: configuration).close() })
        var readOnly = configuration
        readOnly.readOnly = true
        rows.append(fastest("read-only open + close") { try ImageStore(path: directory, configuration: readOnly).close() })
        return rows
    }
}
