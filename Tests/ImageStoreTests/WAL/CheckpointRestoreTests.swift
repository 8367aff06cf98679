import Foundation
import Glibc
import ImageStore
import ImageStoreTestSupport
import LMDB
import Testing

/// The writer commits to LMDB without syncing between checkpoints (`LMDB/MetaPages.swift`): a
/// checkpoint keeps `data.mdb`'s meta pages in `lmdb-checkpoint` and pins its snapshot, and an
/// open after a crash writes those pages back, then replays the log. These tests make the states
/// a crash leaves with real files: the newest meta page on disk without the pages it points to
/// (a power cut), and every later page on disk (a kill).
@Suite struct CheckpointRestoreTests {
    /// Large segments: no checkpoint comes between the one a test takes and its crash.
    private func configuration(maxReaders: Int? = nil) -> ImageStore.Configuration {
        var configuration = LogTest.configuration()
        configuration.logSegmentBytes = 8 << 20
        if let maxReaders { configuration.maxReaders = maxReaders }
        return configuration
    }

    private static let metaBytes = 256
    private static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

    /// The newer transaction id of the two meta pages of `file` (`mm_txnid`, at 144 in a page).
    private static func newestTransaction(of file: String) throws -> UInt64 {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        return data.withUnsafeBytes { raw in
            max(raw.loadUnaligned(fromByteOffset: 144, as: UInt64.self),
                raw.loadUnaligned(fromByteOffset: pageSize + 144, as: UInt64.self))
        }
    }

    /// Waits until LMDB holds every put acknowledged so far (`statistics()` settles the log),
    /// with no checkpoint, and checks that it committed after the checkpoint at `transaction`.
    private static func settle(_ store: ImageStore, file: String, after transaction: UInt64) throws {
        _ = try store.statistics()
        #expect(try newestTransaction(of: file) > transaction, "LMDB committed after the checkpoint")
    }

    /// A store holding the first `count` small entries, closed cleanly.
    private func makeClosedStore(at directory: String, count: Int) throws {
        let store = try ImageStore(path: directory, configuration: configuration())
        _ = try Self.put(0..<count, into: store)
        store.close()
    }

    /// Waits until this process has released the abandoned store's LMDB environment (its last
    /// references go on the store's own queues): an open meanwhile would get that environment,
    /// whose pages are whole, and restore nothing.
    private static func waitUntilReleased(_ directory: String) throws {
        let deadline = Date().addingTimeInterval(20)
        while Environment.isOpenInThisProcess(path: directory) {
            guard Date() < deadline else { throw CocoaError(.fileLocking) }
            usleep(2_000)
        }
    }

    /// Whether `lmdb-checkpoint` says a writer may have committed after its pages (byte 30).
    private static func keptPagesSayAWriterIsOpen(_ directory: String) throws -> Bool {
        try Data(contentsOf: URL(fileURLWithPath: directory + "/lmdb-checkpoint"))[30] == 1
    }

    /// Puts `range` of `LogTest.smallEntry`, each in a transaction of its own.
    private static func put(_ range: Range<Int>, into store: ImageStore) throws -> [String: Data] {
        var put: [String: Data] = [:]
        for n in range {
            let entry = LogTest.smallEntry(n)
            try store.put(entry.data, for: entry.url)
            put[entry.url] = entry.data
        }
        return put
    }

    @Test func aNewestMetaPageWhosePagesNeverReachedTheDiskIsUndoneAndTheLogReplayed() throws {
        try withTemporaryDirectory { directory throws in
            let file = directory + "/data.mdb"
            var expected: [String: Data] = [:]
            let atCheckpoint: Data
            do {
                let store = try ImageStore(path: directory, configuration: configuration())
                expected = try Self.put(0..<40, into: store)
                try store.checkpoint()
                #expect(FileManager.default.fileExists(atPath: directory + "/lmdb-checkpoint"))
                atCheckpoint = try Data(contentsOf: URL(fileURLWithPath: file))
                let checkpointed = try Self.newestTransaction(of: file)
                expected.merge(try Self.put(40..<120, into: store)) { $1 }
                for n in 0..<20 {
                    _ = try store.remove(LogTest.smallEntry(n).url)
                    expected[LogTest.smallEntry(n).url] = nil
                }
                try Self.settle(store, file: file, after: checkpointed)
                store.abandonForTesting()
            }
            try Self.waitUntilReleased(directory)
            #expect(try Self.keptPagesSayAWriterIsOpen(directory))
            // A power cut that kept the newest meta pages and nothing else written since.
            let now = try Data(contentsOf: URL(fileURLWithPath: file))
            var torn = atCheckpoint
            for page in 0..<2 {
                let range = (page * Self.pageSize)..<(page * Self.pageSize + Self.metaBytes)
                torn.replaceSubrange(range, with: now[range])
            }
            #expect(torn != atCheckpoint)
            try torn.write(to: URL(fileURLWithPath: file))

            let store = try ImageStore(path: directory, configuration: configuration())
            defer { store.close() }
            for (url, data) in expected { #expect(try store.get(url)?.data == data, "\(url)") }
            for n in 0..<20 { #expect(try store.get(LogTest.smallEntry(n).url) == nil) }
            try checkConsistency(of: store)
        }
    }

    @Test func theCheckpointsSnapshotSurvivesEveryCommitAfterItUntilTheNext() throws {
        try withTemporaryDirectory { directory throws in
            let file = directory + "/data.mdb"
            var expected: [String: Data] = [:]
            do {
                let store = try ImageStore(path: directory, configuration: configuration())
                expected = try Self.put(0..<60, into: store)
                try store.checkpoint()
                let checkpointed = try Self.newestTransaction(of: file)
                // Churn: every removal frees pages a later put would take, but for the pin.
                for round in 0..<6 {
                    for n in 0..<60 where n % 6 == round {
                        _ = try store.remove(LogTest.smallEntry(n).url)
                        expected[LogTest.smallEntry(n).url] = nil
                    }
                    expected.merge(try Self.put((100 + round * 20)..<(120 + round * 20), into: store)) { $1 }
                }
                try Self.settle(store, file: file, after: checkpointed)
                store.abandonForTesting()
            }
            try Self.waitUntilReleased(directory)
            #expect(try Self.keptPagesSayAWriterIsOpen(directory))
            // Every page written, as after a kill: the open rolls back to the checkpoint (whose
            // tree must be intact) and replays the log over it.
            let store = try ImageStore(path: directory, configuration: configuration())
            defer { store.close() }
            #expect(store.recoveryReport.recordsReplayed > 0, "rolled back, then replayed: \(store.recoveryReport)")
            for (url, data) in expected { #expect(try store.get(url)?.data == data, "\(url)") }
            try checkConsistency(of: store)
        }
    }

    @Test func aReadOnlyOpenAfterACrashRestoresTheCheckpointAndReadsAWholeTree() throws {
        try withTemporaryDirectory { directory throws in
            let file = directory + "/data.mdb"
            var checkpointed: [String: Data] = [:]
            do {
                let store = try ImageStore(path: directory, configuration: configuration())
                checkpointed = try Self.put(0..<30, into: store)
                try store.checkpoint()
                let transaction = try Self.newestTransaction(of: file)
                _ = try Self.put(30..<90, into: store)
                try Self.settle(store, file: file, after: transaction)
                store.abandonForTesting()
            }
            try Self.waitUntilReleased(directory)
            var readOnly = configuration()
            readOnly.readOnly = true
            do {
                let reader = try ImageStore(path: directory, configuration: readOnly)
                defer { reader.close() }
                for (url, data) in checkpointed { #expect(try reader.get(url)?.data == data) }
                #expect(try reader.verify().problems.isEmpty)
            }
            let store = try ImageStore(path: directory, configuration: configuration())
            defer { store.close() }
            for n in 0..<90 { #expect(try store.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
        }
    }

    @Test func aWriterWithoutAReaderSlotToSpareKeepsNoCheckpointAndSyncsEveryCommit() throws {
        try withTemporaryDirectory { directory throws in
            try makeClosedStore(at: directory, count: 10)
            #expect(FileManager.default.fileExists(atPath: directory + "/lmdb-checkpoint"))
            do {
                let store = try ImageStore(path: directory, configuration: configuration(maxReaders: 4))
                // Gone before its first commit: no snapshot of it is pinned any more.
                #expect(!FileManager.default.fileExists(atPath: directory + "/lmdb-checkpoint"))
                _ = try Self.put(10..<20, into: store)
                store.abandonForTesting()
            }
            try Self.waitUntilReleased(directory)
            let reopened = try ImageStore(path: directory, configuration: configuration(maxReaders: 4))
            defer { reopened.close() }
            for n in 0..<20 { #expect(try reopened.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
            try checkConsistency(of: reopened)
        }
    }

    @Test func aKilledWriterThatOverwroteItsKeysOverAndOverOpensWhole() throws {
        try withTemporaryDirectory { directory throws in
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["churn", directory, "2", "sync", "12"])
            #expect(writer.wait(for: "ready"))
            usleep(300_000)
            _ = writer.kill()
            #expect(try Self.keptPagesSayAWriterIsOpen(directory))
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            let entries = try store.entries()
            #expect(!entries.isEmpty)
            for entry in entries { #expect(try store.get(entry.url)?.data.count == entry.byteCount, "\(entry.url)") }
            try checkConsistency(of: store)
        }
    }

    /// Two readers starting together after a crash: the first holds the writer lock to restore
    /// (writing no pid there, so the file still names the dead writer); the second must not open
    /// LMDB until that is done, or it could read what a power cut tore and keep the restore from
    /// happening. Here the test holds the lock as the first reader would. The second is a
    /// read-only store, or the reader table (`imgstore-admin readers`), which opens LMDB alone.
    @Test(arguments: [false, true])
    func aReaderWaitsWhileAnotherHoldsTheWriterLockOfADeadWriter(readerTable: Bool) throws {
        try withTemporaryDirectory { directory throws in
            let writer = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["put", directory, "20", "sync"])
            #expect(writer.wait(for: "ready"))
            _ = writer.kill()
            #expect(try Self.keptPagesSayAWriterIsOpen(directory))
            let lockPath: String = directory + "/writer.lock"
            let lock: Int32 = Glibc.open(lockPath, O_RDONLY)
            try #require(lock >= 0)
            let locked: Int32 = flock(lock, LOCK_EX)
            try #require(locked == 0)
            let order = Order()
            let releaser = Thread {
                usleep(300_000)
                order.note("released")
                _ = Glibc.close(lock)
            }
            releaser.start()
            var readOnly: ImageStore.Configuration = LogTest.configuration()
            readOnly.readOnly = true
            let reader: ImageStore?
            if readerTable {
                _ = try ImageStore.readerSlots(path: directory)
                reader = nil
            } else {
                reader = try ImageStore(path: directory, configuration: readOnly)
            }
            order.note("opened")
            let events: [String] = order.events
            #expect(events == ["released", "opened"], "the reader waited for the lock's release")
            let verifier = try reader ?? ImageStore(path: directory, configuration: readOnly)
            defer { verifier.close() }
            #expect(try verifier.verify().problems.isEmpty)
        }
    }

    @Test func aDamagedCheckpointFileRefusesAWriterAndLetsAReaderReadLMDBAsItStands() throws {
        try withTemporaryDirectory { directory throws in
            try makeClosedStore(at: directory, count: 5)
            try FileCorruption.flipByte(at: 100, in: directory + "/lmdb-checkpoint")
            #expect {
                try ImageStore(path: directory, configuration: configuration())
            } throws: { error in
                guard case let .corruptStore(_, detail) = error as? ImageStoreError else { return false }
                return detail.contains("lmdb-checkpoint is damaged") && detail.contains("move lmdb-checkpoint away")
            }
            var readOnly = configuration()
            readOnly.readOnly = true
            let reader = try ImageStore(path: directory, configuration: readOnly)
            defer { reader.close() }
            for n in 0..<5 { #expect(try reader.get(LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data) }
        }
    }

    @Test func aCleanCloseLeavesNothingToRestore() throws {
        try withTemporaryDirectory { directory throws in
            try makeClosedStore(at: directory, count: 10)
            #expect(try !Self.keptPagesSayAWriterIsOpen(directory))
            let kept = try Data(contentsOf: URL(fileURLWithPath: directory + "/lmdb-checkpoint"))
            let file = try Data(contentsOf: URL(fileURLWithPath: directory + "/data.mdb"))
            // The file's header (40 bytes) precedes the two kept meta-page prefixes.
            #expect(kept.subdata(in: 40..<(40 + Self.metaBytes)) == file.prefix(Self.metaBytes))
            #expect(kept.subdata(in: (40 + Self.metaBytes)..<(40 + 2 * Self.metaBytes))
                    == file.subdata(in: Self.pageSize..<(Self.pageSize + Self.metaBytes)))
        }
    }
}

/// Events noted by two threads, in the order they happened.
private final class Order: @unchecked Sendable {
    private let lock = NSLock()
    private var noted: [String] = []

    func note(_ event: String) { lock.withLock { noted.append(event) } }
    var events: [String] { lock.withLock { noted } }
}
