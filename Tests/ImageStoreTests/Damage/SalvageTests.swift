import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// `verify --repair` saves what a damaged B-tree still holds (issue 13 §4): every entry that
/// could be read before the repair reads back after it, byte for byte, and the store then
/// verifies clean. A salvage is refused while another process has the store open.
@Suite struct SalvageTests {
    static let count = 400

    /// Header damage on one page of each kind of each data database: what makes LMDB's tree
    /// unreadable there (middle damage of a value is the ordinary checksum repair).
    @Test func repairCopiesEveryReadableEntryOfADamagedTreeIntoAFreshDataFile() throws {
        try withTemporaryDirectory { directory in
            let pristine = directory + "/pristine"
            try AdminRun.makeStore(at: pristine, count: Self.count)
            let map = try LMDBPageMap(file: pristine + "/data.mdb")
            var salvaged = 0
            for (n, page) in map.targets.enumerated() where ["entries", "blobs", "access", "expiry"].contains(page.database) {
                let store = directory + "/case-\(n)"
                try FileManager.default.copyItem(atPath: pristine, toPath: store)
                try FileCorruption.overwrite(16, at: page.number * map.pageSize, in: store + "/data.mdb")
                let damage = "16 bytes at the header of the \(page)"
                let before = try AdminRun.readEach(store, count: Self.count)
                let readable = Set(before.results.filter { $0.value == "ok" }.keys)

                let repair = try AdminRun.run(store, ["verify", "--repair"])
                #expect([0, 1].contains(repair.status), "\(repair): \(repair.output): \(damage)")
                if repair.output.contains("damaged-tree") { salvaged += 1 }
                let again = try AdminRun.run(store, ["verify"])
                #expect(again.status == 0, "verify after the repair: \(again): \(again.output): \(damage)")
                let after = try AdminRun.readEach(store, count: Self.count)
                let lost = readable.filter { after.results[$0] != "ok" }.sorted()
                #expect(lost.isEmpty, "the repair lost \(lost.count) readable entries (\(lost.prefix(5))…): \(damage)")
                #expect(!after.results.values.contains("wrong"), "wrong bytes after the repair: \(damage)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: store).filter { $0.contains(".compacting-") } == [],
                        "no left-over of the salvage: \(damage)")
                try? FileManager.default.removeItem(atPath: store)
            }
            #expect(salvaged >= 4, "pages of each database were damaged so that only a salvage saves the rest (\(salvaged))")
        }
    }

    /// The entries and blobs trees both cut at their roots: the index rows still name every
    /// entry, but no record can be read, so the salvage loses them. By fsck's rule that is
    /// corrected (exit 1: the store is consistent again and a second verify is clean), and the
    /// output says how many entries were lost.
    @Test func aSalvageThatLosesEntriesExitsOneAndCountsTheLoss() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            try AdminRun.makeStore(at: store, count: Self.count)
            let map = try LMDBPageMap(file: store + "/data.mdb")
            for database in ["entries", "blobs"] {
                let root = try #require(map.pages.first { $0.database == database }, "\(database) has a root")
                try FileCorruption.overwrite(16, at: root.number * map.pageSize, in: store + "/data.mdb")
            }
            let repair = try AdminRun.run(store, ["verify", "--repair"])
            #expect(repair.status == 1, "\(repair): \(repair.output)")
            let line = repair.output.split(separator: "\n").first { $0.hasPrefix("damaged-tree: ") } ?? ""
            #expect(line.contains("\(Self.count) entries lost") && line.hasSuffix("(repaired)"), "\(repair.output)")
            #expect(repair.output.contains("problem(s) found (1 damaged-tree), 1 repaired"), "\(repair.output)")
            let again = try AdminRun.run(store, ["verify"])
            #expect(again.status == 0 && again.output.hasPrefix("OK: 0 entries"), "\(again): \(again.output)")
        }
    }

    @Test func aSalvageIsRefusedWhileAnotherProcessHasTheStoreOpen() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            try AdminRun.makeStore(at: store, count: Self.count)
            let map = try LMDBPageMap(file: store + "/data.mdb")
            let leaf = try #require(map.targets.first { $0.database == "entries" && $0.kind == .leaf })
            try FileCorruption.overwrite(16, at: leaf.number * map.pageSize, in: store + "/data.mdb")
            let damaged = try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb"))

            let holder = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-read-only", store])
            defer { _ = holder.kill() }
            try #require(holder.wait(for: "ready"))
            let refused = try AdminRun.run(store, ["verify", "--repair"])
            #expect(refused.status == 8, "\(refused): \(refused.output)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb")) == damaged, "the data file is untouched")
            _ = holder.kill()

            let repaired = try AdminRun.run(store, ["verify", "--repair"])
            #expect(repaired.status == 1 && repaired.output.contains("damaged-tree"), "\(repaired): \(repaired.output)")
            #expect(try AdminRun.run(store, ["verify"]).status == 0)
        }
    }

    /// A salvage killed before its swap leaves its fresh environment in the store directory
    /// (the old data file is whole): the next open removes it, once its process is gone.
    @Test func theNextOpenRemovesTheFreshEnvironmentOfAKilledSalvage() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            try AdminRun.makeStore(at: store, count: 10)
            let finished = try ChildProcess.Collecting("/bin/sh", ["-c", "exit 0"])
            _ = finished.waitForExit(timeout: 30)
            let leftover = store + "/salvage.compacting-\(finished.processIdentifier)"
            try FileManager.default.createDirectory(atPath: leftover, withIntermediateDirectories: false)
            #expect(FileManager.default.createFile(atPath: leftover + "/data.mdb", contents: Data(repeating: 1, count: 4096)))
            let opened = try ImageStore(path: store, configuration: makeConfiguration())
            opened.close()
            #expect(!FileManager.default.fileExists(atPath: leftover))
            #expect(try AdminRun.run(store, ["verify"]).status == 0)
        }
    }
}
