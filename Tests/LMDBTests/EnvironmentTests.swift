import CLMDB
import Foundation
import ImageStoreTestSupport
@testable import LMDB
import Synchronization
import Testing

@Suite struct EnvironmentTests {
    private func open(_ directory: String, initial: Int = 1 << 20, max: Int = 1 << 30) throws -> Environment {
        var options = EnvironmentOptions()
        options.initialMapSize = initial
        options.maxMapSize = max
        return try Environment.open(path: directory, options: options)
    }

    // MARK: - Errors

    @Test func errorsCarryTheCodeAndLMDBsText() {
        #expect(LMDBError.mapFull.code == MDB_MAP_FULL)
        #expect(LMDBError.mapFull.description.contains("MDB_MAP_FULL"))
        #expect(LMDBError.noSpace.description.contains("No space left on device"))
        #expect(throws: LMDBError.notFound) { try check(MDB_NOTFOUND) }
        #expect(throws: Never.self) { try check(MDB_SUCCESS) }
    }

    @Test func openingAMissingDirectoryThrowsENOENT() {
        #expect(throws: LMDBError(code: ENOENT)) { try Environment.open(path: "/nonexistent/imgstore/dir") }
    }

    // MARK: - One environment per directory

    /// Failed before: `open` returned the live environment registered for the directory's
    /// device and inode, whatever file it held. A store directory deleted while its
    /// environment lived on handed it to the next directory that got the same inode (ext4
    /// reuses it at once): seen as "Located page was wrong type" in tests run in parallel.
    /// Here the directory keeps its identity and its files are replaced by another store's.
    @Test func anEnvironmentWhoseDataFileIsNoLongerTheDirectorysIsNotReused() throws {
        try withTemporaryDirectory { directory throws in
            let first = directory + "/first", second = directory + "/second"
            for path in [first, second] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
            let stale = try open(first)
            let db = try stale.openDatabase(named: "t")
            try stale.write { txn throws in try txn.put(db, key: [1], value: [1]) }
            do {
                let other = try open(second)
                let otherDB = try other.openDatabase(named: "t")
                try other.write { txn throws in try txn.put(otherDB, key: [1], value: [2]) }
            }
            for name in ["data.mdb", "lock.mdb"] {
                try FileManager.default.removeItem(atPath: first + "/" + name)
                try FileManager.default.moveItem(atPath: second + "/" + name, toPath: first + "/" + name)
            }
            let reopened = try open(first)
            #expect(reopened !== stale)
            let reopenedDB = try reopened.openDatabase(named: "t")
            try reopened.read { txn throws in #expect(try txn.get(reopenedDB, key: [1]).map(Array.init) == [2]) }
            withExtendedLifetime(stale) {}
        }
    }

    // MARK: - Flags

    @Test func opensWithNOTLSAndNeverNOSYNC() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            #expect(environment.flags & UInt32(MDB_NOTLS) != 0)
            #expect(environment.flags & UInt32(MDB_NOSYNC) == 0)
            #expect(environment.flags & UInt32(MDB_WRITEMAP) == 0, "WRITEMAP is opt-in")
        }
    }

    @Test func nestedReadTransactionsOnOneThreadNeedNOTLS() throws {
        // Without MDB_NOTLS a thread owns one reader slot and a second read transaction on the
        // same thread fails with MDB_BAD_RSLOT.
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            let db = try environment.openDatabase(named: "t")
            try environment.write { txn throws in try txn.put(db, key: [1], value: [2]) }
            let value = try environment.read { outer in
                try environment.read { inner in
                    Array(try #require(try inner.get(db, key: [1])))
                } + Array(try #require(try outer.get(db, key: [1])))
            }
            #expect(value == [2, 2])
        }
    }

    // MARK: - Transactions

    @Test func aThrowingWriteIsRolledBackAndAReturningOneCommits() throws {
        struct Abandon: Error {}
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            let db = try environment.openDatabase(named: "t")
            #expect(throws: Abandon.self) {
                try environment.write { txn throws in
                    try txn.put(db, key: [1], value: [1])
                    throw Abandon()
                }
            }
            try environment.write { txn throws in try txn.put(db, key: [2], value: [2]) }
            try environment.read { txn throws in
                #expect(try txn.get(db, key: [1]) == nil)
                #expect(try txn.get(db, key: [2]).map(Array.init) == [2])
            }
        }
    }

    // MARK: - One environment per directory

    @Test func aSecondOpenOfTheSameDirectoryReturnsTheSameEnvironment() throws {
        try withTemporaryDirectory { directory throws in
            let first = try open(directory)
            let second = try open(directory + "/.")
            #expect(first === second)
        }
    }

    // MARK: - Map size

    @Test func theMapIsSizedOnceAtItsMaximumSoAWriteNeverRunsTwice() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory, initial: 64 << 10, max: 64 << 20)
            #expect(environment.mapSize == 64 << 20, "sized at the maximum when opened")
            let db = try environment.openDatabase(named: "t")
            let runs = Atomic<Int>(0)
            try environment.write { txn throws in
                runs.add(1, ordering: .relaxed)
                for n in 0..<20 { try txn.put(db, key: [UInt8(n)], value: [UInt8](repeating: 1, count: 100_000)) }
            }
            #expect(runs.load(ordering: .relaxed) == 1)
            #expect(environment.mapSize == 64 << 20)
            try environment.read { txn throws in #expect(try txn.statistics(db).entries == 20) }
            var status = stat()
            #expect(stat(directory + "/data.mdb", &status) == 0 && Int(status.st_size) < 8 << 20,
                    "without MDB_WRITEMAP the file grows with the data, not with the map")
        }
    }

    @Test func pastTheMaximumTheWriteFailsWithMapFullAndTheEnvironmentStaysUsable() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory, initial: 64 << 10, max: 256 << 10)
            let db = try environment.openDatabase(named: "t")
            #expect(throws: LMDBError.mapFull) {
                try environment.write { txn throws in try txn.put(db, key: [1], value: [UInt8](repeating: 1, count: 1 << 20)) }
            }
            try environment.write { txn throws in try txn.put(db, key: [2], value: [3]) }
            try environment.read { txn throws in #expect(try txn.get(db, key: [2]).map(Array.init) == [3]) }
        }
    }

    @Test(.enabled(if: ToolsOnPath.has("mdb_load"), "needs mdb_load (lmdb-utils) on PATH; Tools/install-deps.sh installs it"))
    func aFileFilledPastThisProcesssMapByAnotherIsMapResizedAndReopeningAdoptsIt() throws {
        try withTemporaryDirectory { directory throws in
            var environment: Environment? = try open(directory, initial: 1 << 20, max: 1 << 20)
            let db = try environment!.openDatabase(named: "t")
            try environment!.write { txn throws in try txn.put(db, key: [1], value: [1]) }

            // mdb_load, as a second process, grows the map to 64 MiB and fills part of it.
            let value = String(repeating: "ab", count: 500_000)
            var dump = "VERSION=3\nformat=bytevalue\ntype=btree\nmapsize=67108864\nHEADER=END\n"
            for n in 0..<8 { dump += " " + String(format: "%02x", n) + "\n " + value + "\n" }
            dump += "DATA=END\n"
            let dumpFile = directory + "/../" + UUID().uuidString + ".dump"
            try dump.write(toFile: dumpFile, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(atPath: dumpFile) }
            let load = try ChildProcess.run(try #require(ToolsOnPath.find("mdb_load")), ["-s", "other", "-f", dumpFile, directory])
            #expect(load.status == 0, "\(load.standardError)")

            // The map is never resized under running transactions: a typed error, no wait.
            #expect(throws: LMDBError.mapResized) { try environment!.read { txn throws in try txn.get(db, key: [1]) } }
            #expect(throws: LMDBError.mapResized) { try environment!.write { txn throws in try txn.put(db, key: [2], value: [2]) } }
            environment = nil
            let reopened = try open(directory, initial: 1 << 20, max: 128 << 20)
            #expect(reopened.mapSize == 128 << 20)
            let again = try reopened.openDatabase(named: "t")
            try reopened.write { txn throws in try txn.put(again, key: [2], value: [2]) }
            try reopened.read { txn throws in #expect(try txn.statistics(again).entries == 2) }
        }
    }

    // MARK: - Replacing the data file

    /// When the reopen after the swap fails, the environment must not keep the freed handle
    /// (the next transaction was a use-after-free): every call throws `lost` instead.
    @Test func aFailedReopenAfterTheSwapLeavesNoDanglingHandle() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            let db = try environment.openDatabase(named: "t")
            try environment.write { txn throws in try txn.put(db, key: [1], value: [2]) }
            let garbage = directory + "/garbage"
            try Data(repeating: 0xAB, count: 1 << 16).write(to: URL(fileURLWithPath: garbage))
            #expect(throws: LMDBError.invalid) {
                try environment.replaceDataFile(install: { rename(garbage, directory + "/data.mdb") }) { _ in }
            }
            #expect(throws: LMDBError.lost) { try environment.read { _ in } }
            #expect(throws: LMDBError.lost) { try environment.write { _ in } }
            #expect(throws: LMDBError.lost) { try environment.statistics() }
            #expect(environment.readerTable() == [])
        }
    }

    /// The lock probe sees a process that has the environment open without a transaction
    /// (invisible in the reader table under MDB_NOTLS), and never this process itself.
    @Test func theLockProbeSeesAnIdleProcessButNotThisOne() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            #expect(try environment.otherProcess() == nil)
            let idle = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-open", directory])
            defer { idle.kill() }
            #expect(idle.wait(for: "ready"))
            #expect(environment.readerTable() == [], "idle: no reader slot")
            #expect(try environment.otherProcess() == idle.processIdentifier)
            #expect(throws: LMDBError.busy) { try environment.replaceDataFile(install: {}) { _ in } }
            try environment.read { _ in }  // still usable
            idle.kill()
            #expect(try environment.otherProcess() == nil)
        }
    }

    /// LMDB opens data.mdb without close-on-exec, so every process spawned later held the
    /// file open: a replaced data file stayed alive in it, and a mount stayed busy.
    @Test func aSpawnedProcessDoesNotInheritTheDataFile() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            let listing = try ChildProcess.run("/usr/bin/env", ["ls", "-l", "/proc/self/fd/"])
            #expect(listing.status == 0)
            #expect(!listing.output.contains(directory), "\(listing.output)")
            withExtendedLifetime(environment) {}
        }
    }

    // MARK: - Readers

    @Test func readerSlotsOfKilledProcessesAreClearedOnOpen() throws {
        try withTemporaryDirectory { directory throws in
            do { _ = try open(directory) }
            // A live process keeps the lock file open, so LMDB does not simply reset the reader
            // table on the next open: only `mdb_reader_check` clears the dead process's slot.
            let survivor = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-reader", directory])
            defer { survivor.kill() }
            #expect(survivor.wait(for: "ready"))
            let victim = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-reader", directory])
            #expect(victim.wait(for: "ready"))
            victim.kill()
            let environment = try open(directory)
            let readers = environment.readerTable()
            #expect(readers.count == 1, "slots: \(readers)")
            #expect(readers.contains { $0.contains(" \(survivor.processIdentifier) ") })
            #expect(!readers.contains { $0.contains(" \(victim.processIdentifier) ") }, "the dead process's slot was cleared")
        }
    }

    @Test func readersKeepReadingWhileTheMapGrows() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory, initial: 64 << 10, max: 1 << 30)
            let db = try environment.openDatabase(named: "t")
            try environment.write { txn throws in try txn.put(db, key: [0], value: [UInt8](repeating: 9, count: 5000)) }
            let stop = Atomic<Bool>(false)
            let bad = Atomic<Int>(0)
            let group = startThreads(3) { _ in
                while !stop.load(ordering: .relaxed) {
                    let ok = (try? environment.read { txn throws in try txn.get(db, key: [0]).map(Array.init) }) == [UInt8](repeating: 9, count: 5000)
                    if !ok { bad.add(1, ordering: .relaxed) }
            }
            }
            for n in 1...40 {
                try environment.write { txn throws in try txn.put(db, key: [UInt8(n)], value: [UInt8](repeating: 1, count: 200_000)) }
            }
            stop.store(true, ordering: .relaxed)
            group.wait()
            #expect(bad.load(ordering: .relaxed) == 0)
            #expect(environment.mapSize >= 8 << 20)
        }
    }
}
