import CLMDB
import Foundation
import ImageStoreTestSupport
@testable import LMDB
import Testing

/// The LMDB half of checkpoints (`MetaPages.swift`): the meta pages read back, the pin, and the
/// restore an open does with kept pages.
@Suite struct MetaPagesTests {
    private func options(checkpoint: MetaPages? = nil) -> EnvironmentOptions {
        var options = EnvironmentOptions()
        options.maxMapSize = 1 << 30
        options.noMetaSync = true
        options.checkpoint = checkpoint
        return options
    }

    /// Commits `count` transactions of one put each, keys from `first`.
    private func commit(_ environment: Environment, _ database: Database, from first: Int, count: Int) throws {
        for n in first..<(first + count) {
            try environment.write { txn in try txn.put(database, key: Array("k\(n)".utf8), value: [UInt8](repeating: UInt8(n & 0xff), count: 3000)) }
        }
    }

    /// The checkpoint's pages, after `count` committed and synced, and the environment, with
    /// unsynced commits allowed and the snapshot pinned.
    private func checkpointed(_ directory: String, count: Int) throws -> (Environment, Database, MetaPages) {
        let environment = try Environment.open(path: directory, options: options())
        let database = try environment.openDatabase(named: "d")
        try commit(environment, database, from: 0, count: count)
        try environment.sync()
        let pages = try environment.metaPages()
        try environment.pinNewestSnapshot(expecting: pages.newestTransaction)
        try environment.setUnsyncedCommits(true)
        return (environment, database, pages)
    }

    /// A checkpoint of five commits, five more after it, and the environment closed: the kept
    /// pages and the last committed transaction.
    private func checkpointedThenCommitted(_ directory: String) throws -> (pages: MetaPages, last: UInt64) {
        let (environment, database, pages) = try checkpointed(directory, count: 5)
        try commit(environment, database, from: 100, count: 5)
        return (pages, try environment.lastCommittedTransaction())
    }

    @Test func theNewestTransactionOfTheMetaPagesIsTheLastCommitted() throws {
        try withTemporaryDirectory { directory throws in
            let environment = try Environment.open(path: directory, options: options())
            let database = try environment.openDatabase(named: "d")
            for count in [1, 2, 5] {
                try commit(environment, database, from: count * 10, count: count)
                #expect(try environment.metaPages().newestTransaction == environment.lastCommittedTransaction())
            }
        }
    }

    @Test func anOpenWithKeptPagesGoesBackToThemAndTheirTreeIsWhole() throws {
        try withTemporaryDirectory { directory throws in
            var pages: MetaPages
            do {
                let (environment, database, kept) = try checkpointed(directory, count: 20)
                pages = kept
                // Churn: removals free pages that later puts would take, but for the pin.
                for n in 0..<20 { try environment.write { txn in _ = try txn.delete(database, key: Array("k\(n)".utf8)) } }
                try commit(environment, database, from: 100, count: 40)
                #expect(try environment.lastCommittedTransaction() > pages.newestTransaction)
            }
            let environment = try Environment.open(path: directory, options: options(checkpoint: pages))
            #expect(try environment.lastCommittedTransaction() == pages.newestTransaction)
            let database = try environment.openDatabase(named: "d")
            let found: [[UInt8]?] = try environment.read { txn in
                try ((0..<20).map { "k\($0)" } + ["k100"]).map { key in try txn.get(database, key: Array(key.utf8)).map { Array($0) } }
            }
            for n in 0..<20 { #expect(found[n] == [UInt8](repeating: UInt8(n), count: 3000)) }
            #expect(found[20] == nil, "a put after the checkpoint is not in its tree")
        }
    }

    @Test func anotherProcessWithTheEnvironmentOpenKeepsItsNewestState() throws {
        try withTemporaryDirectory { directory throws in
            let (pages, last) = try checkpointedThenCommitted(directory)
            let holder = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-open", directory])
            defer { _ = holder.kill() }
            #expect(holder.wait(for: "ready"))
            let environment = try Environment.open(path: directory, options: options(checkpoint: pages))
            #expect(try environment.lastCommittedTransaction() == last, "a live process proves no power cut: nothing restored")
        }
    }

    @Test func keptPagesOfAnotherFileOrOfATreeNoLongerThereAreNotWrittenBack() throws {
        try withTemporaryDirectory { directory throws in
            let (pages, last) = try checkpointedThenCommitted(directory)
            var elsewhere = pages
            elsewhere.dataFile.inode &+= 1
            do {
                let environment = try Environment.open(path: directory, options: options(checkpoint: elsewhere))
                #expect(try environment.lastCommittedTransaction() == last, "another file's pages")
            }
            var otherTree = pages
            otherTree.rootsChecksum &+= 1
            let environment = try Environment.open(path: directory, options: options(checkpoint: otherTree))
            #expect(try environment.lastCommittedTransaction() == last, "root pages that changed")
        }
    }
}
