import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// A store with a damaged tree never acknowledges a write it cannot apply (issue 13 §4), in
/// the library itself: `put` throws `corruptStore` instead of returning, reads of what is
/// undamaged go on, and `verify --repair` saves it. The damage is aimed with `LMDBPageMap` at
/// LMDB's free list (every commit reads it, so no put can be applied) and at the entries tree
/// on a put's path.
@Suite struct DamagedTreeWriteTests {
    static let count = 300

    static func url(_ n: Int) -> String { "https://tree.test/images/\(n).bin" }
    /// 200 bytes (inside a leaf) to 20 KB (overflow pages), distinct per entry.
    static func blob(_ n: Int) -> Data {
        Data((0..<(200 + (n * 977) % 20_000)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n &* 7) })
    }

    /// `count` entries, of which every fifth was removed again, so the free list has records.
    func makeStore(at path: String, count: Int = Self.count) throws -> Set<Int> {
        let store = try ImageStore(path: path, configuration: makeConfiguration())
        for n in 0..<count { try store.put(Self.blob(n), for: Self.url(n), durability: .none) }
        try store.checkpoint()
        for n in stride(from: 0, to: count, by: 5) { try store.remove(Self.url(n), durability: .none) }
        store.close()
        return Set((0..<count).filter { $0 % 5 != 0 })
    }

    /// What a case damages: one page of the map, at its header or its middle.
    struct Target: CustomStringConvertible {
        var page: LMDBPageMap.Page
        var offset: Int
        var description: String { "16 bytes at offset \(offset) of the \(page)" }
    }

    private func targets(_ map: LMDBPageMap, databases: Set<String>) -> [Target] {
        map.targets.filter { databases.contains($0.database) }.flatMap { page in
            [Target(page: page, offset: 0), Target(page: page, offset: map.pageSize / 2)]
        }
    }

    /// Every commit reads the free list: with it damaged, no write may be acknowledged (header
    /// damage), and damage LMDB would never notice (16 bytes in a leaf's free room) lets writes
    /// be taken and applied.
    @Test func aDamagedFreeListRefusesEveryWriteBeforeAcknowledgingItAndTheRestIsSaved() throws {
        try withTemporaryDirectory { directory in
            let pristine = directory + "/pristine"
            let present = try makeStore(at: pristine)
            let map = try LMDBPageMap(file: pristine + "/data.mdb")
            let cases = targets(map, databases: ["(free list)"])
            try #require(!cases.isEmpty, "the test store has free-list pages (\(Set(map.pages.map(\.database))))")
            var refusedCases = 0
            for (n, target) in cases.enumerated() {
                let store = directory + "/free-\(n)"
                try FileManager.default.copyItem(atPath: pristine, toPath: store)
                try FileCorruption.overwrite(16, at: target.page.number * map.pageSize + target.offset, in: store + "/data.mdb")
                let outcome = try checkWrites(store, present: present, damaged: [], target: target)
                if outcome.refused > 0 {
                    refusedCases += 1
                    #expect(outcome.acknowledged.isEmpty, "no write is taken beside a damaged free list: \(target)")
                }
                try checkRepairSaves(store, readable: present.subtracting(outcome.acknowledged.keys), damage: "\(target)", salvaged: outcome.refused > 0)
            }
            #expect(refusedCases > 0, "some free-list damage (the header cases) stops every write")
        }
    }

    /// Damage on the entries tree: a put whose path crosses the damaged page is refused, any
    /// put acknowledged is applied and reads back after a reopen, and the repair saves the rest.
    @Test func aPutOnADamagedPathOfTheEntriesTreeIsRefusedAndEveryAcknowledgedOneIsApplied() throws {
        try withTemporaryDirectory { directory in
            let pristine = directory + "/pristine"
            let present = try makeStore(at: pristine)
            let map = try LMDBPageMap(file: pristine + "/data.mdb")
            let cases = targets(map, databases: ["entries"]).filter { $0.offset == 0 }
            try #require(cases.contains { $0.page.kind == .branch } && cases.contains { $0.page.kind == .leaf })
            for (n, target) in cases.enumerated() {
                let store = directory + "/entries-\(n)"
                try FileManager.default.copyItem(atPath: pristine, toPath: store)
                try FileCorruption.overwrite(16, at: target.page.number * map.pageSize + target.offset, in: store + "/data.mdb")
                let readable = try readableEntries(store, present: present)
                let outcome = try checkWrites(store, present: present, damaged: present.subtracting(readable), target: target)
                #expect(outcome.refused > 0 || readable == present, "a put on the damaged path was refused: \(target)")
                try checkRepairSaves(store, readable: readable.subtracting(outcome.acknowledged.keys), damage: "\(target)", salvaged: outcome.refused > 0)
            }
        }
    }

    /// The entries that read back whole, in a read-only open.
    func readableEntries(_ store: String, present: Set<Int>) throws -> Set<Int> {
        var configuration = makeConfiguration()
        configuration.readOnly = true
        let opened = try ImageStore(path: store, configuration: configuration)
        defer { opened.close() }
        return present.filter { (try? opened.get(Self.url($0)))??.data == Self.blob($0) }
    }

    /// Opens the damaged store as the writer and tries a new put, re-puts of up to 20 entries in
    /// `damaged` and of 5 others, and a removal. Each is refused with `corruptStore` or
    /// acknowledged; every acknowledged one must read back after a reopen. Undamaged entries
    /// read on beside the refusals.
    private func checkWrites(_ store: String, present: Set<Int>, damaged: Set<Int>, target: Target) throws
        -> (refused: Int, acknowledged: [Int: Data]) {
        let opened = try ImageStore(path: store, configuration: makeConfiguration())
        var refused = 0
        var acknowledged: [Int: Data] = [:]
        let undamaged = present.subtracting(damaged).sorted()
        for n in [Self.count + 1] + damaged.sorted().prefix(20) + undamaged.prefix(5) {
            let data = Self.blob(n + 1000)
            do {
                try opened.put(data, for: Self.url(n))
                acknowledged[n] = data
            } catch {
                #expect(Self.isCorruptStore(error), "\(error): \(target)")
                refused += 1
            }
        }
        for removed in undamaged.dropFirst(5).prefix(1) + damaged.sorted().prefix(1) {
            do {
                if try opened.remove(Self.url(removed)) { acknowledged[removed] = Data() }
            } catch {
                #expect(Self.isCorruptStore(error), "\(error): \(target)")
            }
        }
        for n in undamaged.dropFirst(6).prefix(40) {
            #expect(try opened.get(Self.url(n))?.data == Self.blob(n), "entry \(n) reads on: \(target)")
        }
        opened.close()
        let reopened = try ImageStore(path: store, configuration: makeConfiguration())
        defer { reopened.close() }
        for (n, data) in acknowledged {
            #expect(try reopened.get(Self.url(n))?.data == (data.isEmpty ? nil : data), "acknowledged write \(n) applied: \(target)")
        }
        return (refused, acknowledged)
    }

    /// `verify(repair:)` saves every entry in `readable`; the store then takes writes at once,
    /// and after a reopen verifies clean.
    func checkRepairSaves(_ store: String, readable: Set<Int>, damage: String, salvaged: Bool) throws {
        let repairing = try ImageStore(path: store, configuration: makeConfiguration())
        let report = try repairing.verify(ImageStore.VerifyOptions(repair: true))
        if salvaged { #expect(report.problems.contains { $0.kind == .damagedTree }, "\(report.problems): \(damage)") }
        #expect(report.unrepaired.isEmpty, "\(report.problems): \(damage)")
        // The repaired store takes writes again at once, without a reopen.
        try repairing.put(Self.blob(8), for: "https://tree.test/repaired.bin")
        #expect(try repairing.get("https://tree.test/repaired.bin")?.data == Self.blob(8))
        repairing.close()
        let repaired = try ImageStore(path: store, configuration: makeConfiguration())
        defer { repaired.close() }
        #expect(try repaired.verify().problems == [], "verify after the repair: \(damage)")
        let lost = readable.filter { (try? repaired.get(Self.url($0)))??.data != Self.blob($0) }
        #expect(lost.isEmpty, "the repair lost \(lost.count) readable entries: \(damage)")
        try repaired.put(Self.blob(7), for: "https://tree.test/after-repair.bin")
        #expect(try repaired.get("https://tree.test/after-repair.bin")?.data == Self.blob(7))
    }

    static func isCorruptStore(_ error: any Error) -> Bool {
        if case .corruptStore? = error as? ImageStoreError { return true }
        return false
    }
}
