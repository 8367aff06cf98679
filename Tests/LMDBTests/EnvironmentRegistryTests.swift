import Foundation
import ImageStoreTestSupport
@testable import LMDB
import Locking
import Testing

/// One process has at most one LMDB environment per directory (lmdb.h: never open an
/// environment twice in one process). `Environment.open` returns the open one; when the last
/// reference to it is being released, a new open must wait until it has closed.
@Suite(.serialized) struct EnvironmentRegistryTests {
    final class Holder: @unchecked Sendable {
        // Set once before the thread that clears it starts, then only read there.
        var environment: Environment?
        init(_ environment: Environment) { self.environment = environment }
    }

    /// Puts a value in the holder's environment, in database "t".
    @inline(never)
    static func fill(_ holder: Holder) throws {
        let environment = try #require(holder.environment)
        let db = try environment.openDatabase(named: "t")
        try environment.write { txn throws in try txn.put(db, key: [1], value: [42]) }
    }

    /// Seen in a full `swift test` run as `LogFaultTests.aFailingDirectoryListingFailsTheOpenInsteadOfSkippingTheLog`
    /// failing with `MDB_BAD_RSLOT`. Between the moment the last strong reference goes (the
    /// registry's weak reference reads nil) and the moment its `deinit` takes the registry's
    /// lock, an open of the same directory made a second environment. The first one's
    /// `mdb_env_close` then cleared every reader slot of this process in `lock.mdb` (it frees
    /// slots by pid) and closed its descriptors (dropping this process's `fcntl` locks on the
    /// file), so the second environment's kept reader was renewed on a slot no longer its own.
    @Test func anOpenWhileTheLastReferenceIsReleasedWaitsForTheClose() throws {
        try withTemporaryDirectory { directory throws in
            let entered = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0)
            Environment.closingHookForTesting.withLock {
                $0 = { path in
                    // Other tests' environments close too meanwhile: only this one's is held.
                    if path == directory {
                        Environment.closingHookForTesting.withLock { $0 = nil }  // holds the first release only
                        entered.signal()
                        _ = proceed.wait(timeout: .now() + 30)
                    }
                }
            }
            defer { Environment.closingHookForTesting.withLock { $0 = nil } }

            // The only reference to the first environment is the holder's, so that clearing it releases it.
            let holder = Holder(try Environment.openForTest(directory))
            try Self.fill(holder)
            let released = DispatchSemaphore(value: 0)
            Thread { holder.environment = nil; released.signal() }.start()  // its deinit runs there
            #expect(entered.wait(timeout: .now() + 30) == .success, "the first environment's deinit began")

            let second = LockedValue<Result<(Environment, Database), any Error>?>(nil)
            let opened = DispatchSemaphore(value: 0)
            Thread {
                second.withLock {
                    $0 = Result {
                        let environment = try Environment.openForTest(directory)
                        let db = try environment.openDatabase(named: "t", create: false)
                        _ = try environment.read { txn throws in try txn.get(db, key: [1]).map(Array.init) }  // keeps a reader
                        return (environment, db)
                    }
                }
                opened.signal()
            }.start()
            let openedBeforeTheClose = opened.wait(timeout: .now() + 5) == .success  // long enough for a loaded machine
            proceed.signal()
            #expect(released.wait(timeout: .now() + 30) == .success)
            if !openedBeforeTheClose { #expect(opened.wait(timeout: .now() + 30) == .success) }
            #expect(!openedBeforeTheClose, "a second environment was made while the first was still open")

            let (environment, db) = try #require(try second.withLock { $0 }?.get())
            for _ in 0..<3 {
                #expect(try environment.read { txn throws in try txn.get(db, key: [1]).map(Array.init) } == [42])
            }
            #expect(environment.readerSlots().filter { $0.pid == getpid() }.count == 1)
        }
    }
}
