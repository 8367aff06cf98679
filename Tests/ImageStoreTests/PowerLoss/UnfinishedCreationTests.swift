import Foundation
import ImageStore
import ImageStoreTestSupport
import LMDB
import Testing

/// What a power cut during store creation leaves behind, made by hand: the store must open
/// (finishing its creation and replaying its log), and a store that holds data is never
/// called "not an imgstore store … use an empty directory".
@Suite struct UnfinishedCreationTests {
    private let child = ChildProcess.product("imgstore-test-child")

    // MARK: - Creation cut off: the store opens and keeps every logged write

    /// The creation transaction never reached the disk: data.mdb is a fresh LMDB file with no
    /// databases (LMDB wrote its meta pages), and the log holds synced, acknowledged puts.
    @Test func aStoreWhoseFormatRecordWasLostOpensAndReplaysItsLog() throws {
        try withTemporaryDirectory { directory in
            let acked = try makeCrashedStore(at: directory, count: 5)
            try replaceDataFile(in: directory) { try Environment.open(path: directory).sync() }
            try expectOpens(directory, with: acked)
        }
    }

    /// The cut left data.mdb empty (its size or blocks never reached the disk).
    @Test func aStoreWithAnEmptyDataFileOpensAndReplaysItsLog() throws {
        try withTemporaryDirectory { directory in
            let acked = try makeCrashedStore(at: directory, count: 5)
            try replaceDataFile(in: directory) { FileManager.default.createFile(atPath: directory + "/data.mdb", contents: Data()) }
            try expectOpens(directory, with: acked)
        }
    }

    /// The cut left data.mdb at its size but with its pages never written (zeros, as xfs shows
    /// an extent that was allocated and not written).
    @Test func aStoreWithAnAllZeroDataFileOpensAndReplaysItsLog() throws {
        try withTemporaryDirectory { directory in
            let acked = try makeCrashedStore(at: directory, count: 5)
            try replaceDataFile(in: directory) {
                FileManager.default.createFile(atPath: directory + "/data.mdb", contents: Data(count: 8192))
            }
            try expectOpens(directory, with: acked)
        }
    }

    @Test func anUnfinishedCreationWithoutALogOpensAsAnEmptyStore() throws {
        try withTemporaryDirectory { directory in
            try Environment.open(path: directory).sync()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            #expect(try store.entries().isEmpty)
            try checkConsistency(of: store)
            store.close()
        }
    }

    /// A read-only open cannot finish a creation; it says so, and never advises using an
    /// empty directory when the log holds writes.
    @Test func aReadOnlyOpenOfAnUnfinishedCreationWithALogSaysHowToFinishIt() throws {
        try withTemporaryDirectory { directory in
            try makeCrashedStore(at: directory, count: 2)
            try replaceDataFile(in: directory) { try Environment.open(path: directory).sync() }
            var configuration = LogTest.configuration()
            configuration.readOnly = true
            let error = try #require(throws: ImageStoreError.self) { try ImageStore(path: directory, configuration: configuration) }
            #expect(!error.description.contains("empty or new directory"), "\(error)")
            #expect(error.description.contains("open it once for writing"), "\(error)")
        }
    }

    // MARK: - Damaged stores are never called foreign

    @Test func aStoreWhoseFormatRecordIsMissingIsDamagedNotForeign() throws {
        try withTemporaryDirectory { directory in
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            try store.put(Data([1, 2, 3]), for: "https://x.test/a")
            store.close()
            do {  // the environment must be gone before the store opens (LMDB shares one per directory)
                let environment = try Environment.open(path: directory)
                let meta = try environment.openDatabase(named: "meta", create: false)
                try environment.write { txn in _ = try txn.delete(meta, key: Array("format".utf8)) }
                try environment.sync()
            }
            try expectDamagedNotForeign(directory, saying: "format record")
        }
    }

    @Test func aForeignLMDBFileWithLogSegmentsBesideItIsDamagedNotForeign() throws {
        try withTemporaryDirectory { directory in
            try makeCrashedStore(at: directory, count: 2)
            try replaceDataFile(in: directory) { try makeForeignEnvironment(directory) }
            try expectDamagedNotForeign(directory, saying: "log segment")
        }
    }

    @Test func aForeignLMDBFileAloneIsStillNotAStore() throws {
        try withTemporaryDirectory { directory in
            try makeForeignEnvironment(directory)
            #expect(throws: ImageStoreError.notAStore(path: directory, found: "an LMDB database without imgstore's metadata")) {
                try ImageStore(path: directory, configuration: LogTest.configuration())
            }
        }
    }

    // MARK: - Helpers

    /// Opening `directory` fails with `corruptStore` whose message mentions `words` and never
    /// advises an empty directory.
    private func expectDamagedNotForeign(_ directory: String, saying words: String,
                                         sourceLocation: SourceLocation = #_sourceLocation) throws {
        let error = try #require(throws: ImageStoreError.self, sourceLocation: sourceLocation) {
            try ImageStore(path: directory, configuration: LogTest.configuration())
        }
        guard case .corruptStore = error else {
            Issue.record("expected corruptStore, got \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(!error.description.contains("empty or new directory"), "\(error)", sourceLocation: sourceLocation)
        #expect(error.description.contains(words), "\(error)", sourceLocation: sourceLocation)
    }

    /// Replaces the store's data file (and LMDB's lock file) with what `make` leaves.
    private func replaceDataFile(in directory: String, _ make: () throws -> Void) throws {
        try FileManager.default.removeItem(atPath: directory + "/data.mdb")
        try? FileManager.default.removeItem(atPath: directory + "/lock.mdb")
        try make()
    }

    /// An LMDB environment used by something else: one named database with one key.
    private func makeForeignEnvironment(_ directory: String) throws {
        let environment = try Environment.open(path: directory)
        let other = try environment.openDatabase(named: "other")
        try environment.write { txn in try txn.put(other, key: [1], value: [2]) }
        try environment.sync()
    }

    /// A child process puts `count` entries with `.sync` into a new store that never applies
    /// its log, and is killed: the log holds every acknowledged put, LMDB none. (A child, so no
    /// LMDB environment of this process stays open on the directory.) Returns what it acked.
    @discardableResult
    private func makeCrashedStore(at directory: String, count: Int) throws -> [String: (size: Int, checksum: UInt64)] {
        let writer = try ChildProcess.Collecting(child, ["put", directory, String(count), "sync", "keep-log"])
        #expect(writer.wait(for: "ready"), "the child put its entries")
        let acked = LogTest.acknowledged(in: writer.kill())
        #expect(acked.count == count)
        return acked
    }

    private func expectOpens(_ directory: String, with acked: [String: (size: Int, checksum: UInt64)],
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        let store = try ImageStore(path: directory, configuration: LogTest.configuration())
        defer { store.close() }
        for (url, expected) in acked {
            #expect(try store.get(url)?.info.checksum == expected.checksum, "\(url) replayed", sourceLocation: sourceLocation)
        }
        try checkConsistency(of: store, sourceLocation: sourceLocation)
        #expect(try store.verify().problems == [], sourceLocation: sourceLocation)
    }
}
