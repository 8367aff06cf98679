import Foundation
import ImageStoreTestSupport
@testable import LMDB
import Synchronization
import Testing

/// `Environment.read` renews kept read transactions (`ReadTransactionPool`): what a kept one
/// must never do is serve an old snapshot, pin pages while idle, or take more reader slots
/// than the pool holds.
@Suite struct ReadTransactionPoolTests {
    private func open(_ directory: String, maxReaders: UInt32 = 510) throws -> Environment {
        var options = EnvironmentOptions()
        options.maxMapSize = 1 << 30
        options.maxReaders = maxReaders
        return try Environment.open(path: directory, options: options)
    }

    /// This process's slots in the reader table, each with its snapshot ("-" when idle).
    private func ownSlots(_ environment: Environment) -> [ReaderSlot] {
        environment.readerSlots().filter { $0.pid == getpid() }
    }

    private func value(_ environment: Environment, _ db: Database, key: [UInt8] = [1]) throws -> [UInt8]? {
        try environment.read { txn throws in try txn.get(db, key: key).map(Array.init) }
    }

    // MARK: - Snapshots

    /// A kept transaction renewed for each read sees every commit made before that read, also
    /// after idling (a reader that kept its first snapshot would see 0 for ever).
    @Test func everyReadSeesTheCommitsBeforeIt() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            let db = try environment.openDatabase(named: "t")
            for n in 0..<200 {
                try environment.write { txn throws in try txn.put(db, key: [1], value: [UInt8(n & 0xFF), UInt8(n >> 8)]) }
                #expect(try value(environment, db) == [UInt8(n & 0xFF), UInt8(n >> 8)])
                #expect(try environment.read { txn in txn.id } == n + 2, "the read's snapshot is the last commit")
            }
            #expect(ownSlots(environment).count == 1, "one thread reading keeps one transaction")
        }
    }

    /// Between reads a kept transaction holds its slot but no snapshot, so the writer reuses
    /// freed pages: the file stays as big as two copies of the value, where a pinned snapshot
    /// makes it grow by one copy per overwrite.
    @Test func anIdleKeptTransactionPinsNoPages() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            let db = try environment.openDatabase(named: "t")
            let big = [UInt8](repeating: 7, count: 1 << 20)
            try environment.write { txn throws in try txn.put(db, key: [1], value: big) }
            #expect(try value(environment, db)?.count == big.count)
            let slots = ownSlots(environment)
            #expect(slots.count == 1 && slots.allSatisfy { $0.transaction == nil }, "idle: \(slots)")
            #expect(environment.oldestReaderTransaction() == nil)
            let before = try environment.statistics().lastPageNumber
            for _ in 0..<20 {
                try environment.write { txn throws in try txn.put(db, key: [1], value: big) }
                _ = try value(environment, db)
            }
            let grown = try environment.statistics().lastPageNumber - before
            #expect(grown < 3 * big.count / 4096, "the file grew by \(grown) pages over 20 overwrites")
        }
    }

    // MARK: - Slots

    /// However many threads read, the process keeps at most the pool's transactions.
    @Test func manyThreadsKeepAtMostThePoolsTransactions() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            let db = try environment.openDatabase(named: "t")
            try environment.write { txn throws in try txn.put(db, key: [1], value: [9]) }
            let wrong = Atomic<Int>(0)
            startThreads(12) { _ in
                for _ in 0..<2_000 where (try? value(environment, db)) != [9] { wrong.add(1, ordering: .relaxed) }
            }.wait()
            #expect(wrong.load(ordering: .relaxed) == 0)
            let slots = ownSlots(environment)
            #expect(slots.count <= Environment.keptReaders(maxReaders: 510), "\(slots)")
            #expect(slots.allSatisfy { $0.transaction == nil }, "\(slots)")
        }
    }

    /// A small reader table keeps no transaction: each read takes a slot and gives it back.
    @Test func aSmallReaderTableKeepsNone() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory, maxReaders: 8)
            let db = try environment.openDatabase(named: "t")
            try environment.write { txn throws in try txn.put(db, key: [1], value: [9]) }
            #expect(try value(environment, db) == [9])
            #expect(ownSlots(environment).isEmpty)
        }
    }

    /// Swapping the data file ends the kept transactions first (LMDB closes an environment
    /// only with none open), and reads afterwards see the new file.
    @Test func replacingTheDataFileEndsTheKeptTransactions() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            let db = try environment.openDatabase(named: "t")
            try environment.write { txn throws in try txn.put(db, key: [1], value: [1]) }
            #expect(try value(environment, db) == [1])
            let copy = directory + "/copy"
            let fd = Foundation.open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try environment.copy(toDescriptor: fd, compact: true)
            close(fd)
            try environment.write { txn throws in try txn.put(db, key: [1], value: [2]) }
            #expect(try value(environment, db) == [2])
            try environment.replaceDataFile(install: { rename(copy, directory + "/data.mdb") }) { txn in
                _ = try txn.openDatabase(named: "t", create: false)
            }
            #expect(try value(environment, db) == [1], "the copy's value, read in a transaction of the new file")
        }
    }

    // MARK: - Cursors and databases

    /// A scan nested in another scan's body, on the same database, gets a cursor of its own:
    /// the kept one is lent to one scan at a time.
    @Test func aScanInsideAScanOfTheSameDatabaseGetsItsOwnCursor() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try open(directory)
            let db = try environment.openDatabase(named: "t")
            try environment.write { txn throws in for k in 0..<5 as Range<UInt8> { try txn.put(db, key: [k], value: [k]) } }
            for _ in 0..<3 {  // the second and third reads renew the kept transaction and its cursor
                let pairs: [[UInt8]] = try environment.read { txn throws in
                    var pairs: [[UInt8]] = []
                    try txn.scan(db) { outer, _ in
                        try txn.scan(db) { inner, _ in
                            pairs.append([outer[0], inner[0]])
                            return true
                        }
                        return true
                    }
                    return pairs
                }
                #expect(pairs == (0..<5).flatMap { o in (0..<5).map { [UInt8(o), UInt8($0)] } })
            }
        }
    }

    /// A database opened inside a read (a read-only environment opens them so) stays usable
    /// afterwards: that read is committed, not reset.
    @Test func aDatabaseOpenedInAReadStaysUsable() throws {
        try withTemporaryDirectory { directory throws in
            do {
                let writer = try open(directory)
                let db = try writer.openDatabase(named: "t")
                try writer.write { txn throws in try txn.put(db, key: [1], value: [5]) }
                #expect(try value(writer, db) == [5])
            }
            var options = EnvironmentOptions()
            options.readOnly = true
            let reader = try Environment.open(path: directory, options: options)
            let db = try reader.read { txn throws in try txn.openDatabase(named: "t", create: false) }
            for _ in 0..<3 { #expect(try value(reader, db) == [5]) }
        }
    }
}
