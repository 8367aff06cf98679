import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Damage on a page beside a write's path (issue 13 §4): the write's own path check reads only
/// the pages from the root to the key's leaf, but LMDB's rebalance (a removal that leaves a leaf
/// under a quarter full moves a node from, or merges with, its left neighbour; the leftmost
/// leaf uses its right one) and page split read pages next to that path. Such a write must be
/// refused before it is logged, or applied: never acknowledged and then lost, or stop the
/// applier.
extension DamagedTreeWriteTests {
    /// Enough entries for several leaves in each of `entries` and `blobs`, under one root.
    static let siblingCount = 800

    /// A store of `siblingCount` entries and where they lie.
    struct SiblingStore {
        var present: Set<Int>
        var map: LMDBPageMap
        /// Each entries-tree key's entry number.
        var owners: [[UInt8]: Int]

        /// `database`'s pages of `kind`, in key order.
        func pages(_ database: String, _ kind: LMDBPageMap.Kind) -> [LMDBPageMap.Page] {
            map.pages.filter { $0.database == database && $0.kind == kind }
        }

        /// The entries whose keys lie on the leaf `page` (of `entries` or `blobs`: same keys).
        func entries(on page: LMDBPageMap.Page) -> [Int] { (map.nodes[page.number] ?? []).compactMap { owners[$0.key] } }
    }

    func siblingStore(at path: String) throws -> SiblingStore {
        let present = try makeStore(at: path, count: Self.siblingCount)
        let map = try LMDBPageMap(file: path + "/data.mdb")
        let built = SiblingStore(present: present, map: map, owners: Self.entryNumbers(map))
        try #require(built.owners.count == present.count, "every record's entry is found in the leaves")
        return built
    }

    /// Each entries-tree key's entry number, read from the records in the leaves (a record
    /// holds its URL as UTF-8).
    static func entryNumbers(_ map: LMDBPageMap) -> [[UInt8]: Int] {
        let prefix = Array(url(0).utf8.dropLast("0.bin".count))  // "https://tree.test/images/"
        var numbers: [[UInt8]: Int] = [:]
        for page in map.pages where page.database == "entries" && page.kind == .leaf {
            for node in map.nodes[page.number] ?? [] {
                guard let value = node.value, let start = value.firstRange(of: prefix)?.upperBound else { continue }
                let digits = value[start...].prefix { (0x30...0x39).contains($0) }
                if let n = Int(String(decoding: digits, as: UTF8.self)) { numbers[node.key] = n }
            }
        }
        return numbers
    }

    /// For leaves of `entries` and `blobs` (the leftmost and the one before the last), 16
    /// bytes are damaged at the header, the node offsets, the middle and the end (where the
    /// first nodes' bytes lie). The entries of the damaged leaf's right neighbour are
    /// then removed (so the neighbour rebalances onto the damaged leaf) and new entries put
    /// (splits). Every write is refused with `corruptStore` or applied and reads back after a
    /// reopen; a refused one left nothing behind; `verify --repair` saves every readable entry.
    @Test func aWriteThatMergesOrSplitsOntoADamagedSiblingIsRefusedOrAppliedNeverLost() throws {
        try withTemporaryDirectory { directory in
            let pristine = directory + "/pristine"
            let built = try siblingStore(at: pristine)
            let (present, map) = (built.present, built.map)
            var cases: [(target: Target, neighbours: [Int])] = []
            for database in ["entries", "blobs"] {
                let leaves = built.pages(database, .leaf)
                try #require(leaves.count >= 6 && built.pages(database, .branch).count == 1, "\(database): several leaves under one root")
                for index in [0, leaves.count - 2] {
                    let neighbours = built.entries(on: leaves[index + 1])
                    try #require(!neighbours.isEmpty, "\(database) leaf \(index + 1) holds entries")
                    for offset in [0, 16, map.pageSize / 2, map.pageSize - 16] {
                        cases.append((Target(page: leaves[index], offset: offset), neighbours))
                    }
                }
            }
            var refusedCases = 0
            for (n, (target, neighbours)) in cases.enumerated() {
                let store = directory + "/sibling-\(n)"
                try FileManager.default.copyItem(atPath: pristine, toPath: store)
                try FileCorruption.overwrite(16, at: target.page.number * map.pageSize + target.offset, in: store + "/data.mdb")
                let readable = try readableEntries(store, present: present)
                guard let outcome = try checkSiblingWrites(store, removing: neighbours.filter(readable.contains), target: target) else { continue }
                if outcome.refused > 0 { refusedCases += 1 }
                try checkRepairSaves(store, readable: readable.subtracting(outcome.acknowledged.keys), damage: "\(target)",
                                     salvaged: outcome.refused > 0)
            }
            #expect(refusedCases > 0, "damage to a sibling's header stops the writes that would merge onto it")
        }
    }

    /// Writes acknowledged before the damage that LMDB does not hold yet (in the log only, as
    /// after a crash), which would merge onto the damaged leaf when applied: the writable open
    /// replays nothing into the damaged file and keeps the log, reads go on, writes are refused,
    /// and `verify --repair` replays the records into the fresh data file. None is lost.
    @Test func acknowledgedWritesTheDamagedFileLacksAreReplayedIntoTheSalvagedOne() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            let built = try siblingStore(at: store)
            let (present, map) = (built.present, built.map)
            let leaves = built.pages("entries", .leaf)
            try #require(leaves.count >= 2)
            let removed = built.entries(on: leaves[1])
            let added = Array(Self.siblingCount..<(Self.siblingCount + 10))
            var configuration = makeConfiguration()
            configuration.applyLog = false
            do {
                let logging = try ImageStore(path: store, configuration: configuration)
                for n in removed { try logging.remove(Self.url(n), durability: .sync) }
                for n in added { try logging.put(Self.blob(n), for: Self.url(n), durability: .sync) }
                logging.abandonForTesting()  // as a crash: nothing applied
            }
            try FileCorruption.overwrite(16, at: leaves[0].number * map.pageSize, in: store + "/data.mdb")
            let readable = try readableEntries(store, present: present)
            #expect(readable.isSuperset(of: removed) && readable.count < present.count, "the damage hides leaf 0's entries only")

            let opened = try ImageStore(path: store, configuration: makeConfiguration())
            #expect(try opened.get(Self.url(removed[0]))?.data == Self.blob(removed[0]), "reads go on")
            #expect(throws: ImageStoreError.self) { try opened.put(Self.blob(1), for: Self.url(Self.siblingCount + 20)) }
            // Nor does the store write to the damaged file itself (sweeps, evictions, access times).
            #expect(throws: ImageStoreError.self) { try opened.sweepExpired() }
            let report = try opened.verify(ImageStore.VerifyOptions(repair: true))
            #expect(report.unrepaired.isEmpty, "\(report.problems)")
            let salvage = report.problems.first { $0.kind == .damagedTree }
            #expect(salvage?.detail.contains("\(removed.count + added.count) log records not yet applied replayed") == true, "\(report.problems)")
            opened.close()

            let repaired = try ImageStore(path: store, configuration: makeConfiguration())
            defer { repaired.close() }
            #expect(try repaired.verify().problems == [])
            for n in removed { #expect(try repaired.get(Self.url(n)) == nil, "acknowledged removal of \(n) applied") }
            for n in added { #expect(try repaired.get(Self.url(n))?.data == Self.blob(n), "acknowledged put of \(n) applied") }
            for n in readable.subtracting(removed) { #expect(try repaired.get(Self.url(n))?.data == Self.blob(n), "entry \(n) saved") }
        }
    }

    /// Removes `removing` and puts 40 new entries, each refused (`corruptStore`) or
    /// acknowledged; then reopens as the writer: every acknowledged write reads back, and no
    /// refused one was applied. Nil (an issue recorded) when the reopen fails.
    private func checkSiblingWrites(_ store: String, removing: [Int], target: Target) throws
        -> (refused: Int, acknowledged: [Int: Data])? {
        let opened = try ImageStore(path: store, configuration: makeConfiguration())
        var acknowledged: [Int: Data] = [:]
        var refused: [Int: Data] = [:]
        func attempt(_ n: Int, _ data: Data, _ write: () throws -> Void) {
            do {
                try write()
                acknowledged[n] = data
            } catch {
                #expect(Self.isCorruptStore(error), "\(error): \(target)")
                refused[n] = data
            }
        }
        for n in removing { attempt(n, Data()) { _ = try opened.remove(Self.url(n)) } }
        for n in Self.siblingCount..<(Self.siblingCount + 40) {
            attempt(n, Self.blob(n)) { try opened.put(Self.blob(n), for: Self.url(n)) }
        }
        opened.close()
        let reopened: ImageStore
        do {
            reopened = try ImageStore(path: store, configuration: makeConfiguration())
        } catch {
            Issue.record("reopening as the writer after \(acknowledged.count) acknowledged writes failed: \(error): \(target)")
            return nil
        }
        defer { reopened.close() }
        for (n, data) in acknowledged {
            #expect(try reopened.get(Self.url(n))?.data == (data.isEmpty ? nil : data), "acknowledged write \(n) applied: \(target)")
        }
        for (n, data) in refused {
            // A refused removal left its entry; a refused put left none (a new key whose path
            // crosses the damaged page may also not be read: `corruptStore`).
            do {
                #expect(try reopened.get(Self.url(n))?.data == (data.isEmpty ? Self.blob(n) : nil), "refused write \(n) not applied: \(target)")
            } catch {
                #expect(!data.isEmpty && Self.isCorruptStore(error), "refused write \(n): \(error): \(target)")
            }
        }
        return (refused.count, acknowledged)
    }
}
