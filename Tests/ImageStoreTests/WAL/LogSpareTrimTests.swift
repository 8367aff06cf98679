import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Locking
import Testing

/// The open keeps every segment it replayed as a spare (a rename) and leaves deleting those
/// beyond `SegmentRecycler.maxSpares` to the writer queue: the open never waits for a deletion,
/// and no more than `maxSpares` spares outlive `close`.
@Suite struct LogSpareTrimTests {
    /// The real file system, with hooks: each removal notes its thread and path, and the first
    /// made on another thread than `opener` waits for `releaseTrim` (at most 10 s); a rename
    /// whose source is `heldSpare` first releases the trim and waits until that spare is deleted.
    private final class HookedFileSystem: LogFileSystem {
        private let real = PosixLogFileSystem()
        let opener = pthread_self()
        let removals = LockedValue<[(thread: pthread_t, path: String)]>([])
        let releaseTrim = DispatchSemaphore(value: 0)
        let heldSpareDeleted = DispatchSemaphore(value: 0)
        let heldSpare = LockedValue<String?>(nil)
        let renamedAfterDeletion = LockedValue(false)
        private let trimHeld = LockedValue(false)

        func open(_ path: String, preallocate: Int) throws(LogIOError) -> any LogFile {
            try real.open(path, preallocate: preallocate)
        }
        func rename(_ from: String, to: String) throws(LogIOError) {
            if from == heldSpare.withLock({ $0 }) {
                releaseTrim.signal()
                _ = heldSpareDeleted.wait(timeout: .now() + 10)
                renamedAfterDeletion.withLock { $0 = true }
            }
            try real.rename(from, to: to)
        }
        func remove(_ path: String) throws(LogIOError) {
            let thread = pthread_self()
            removals.withLock { $0.append((thread, path)) }
            let first = pthread_equal(thread, opener) == 0 && trimHeld.withLock { let was = $0; $0 = true; return !was }
            if first { _ = releaseTrim.wait(timeout: .now() + 10) }
            try real.remove(path)
            if path == heldSpare.withLock({ $0 }) { heldSpareDeleted.signal() }
        }
        func syncDirectory(_ directory: String) throws(LogIOError) { try real.syncDirectory(directory) }
        func contentsOfDirectory(_ directory: String) throws(LogIOError) -> [String] {
            try real.contentsOfDirectory(directory)
        }
    }

    private static func spares(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(SegmentRecycler.sparePrefix) }
    }

    /// A crash leaves a log of many 4 KiB segments. The open renames every one it replayed to
    /// a spare and deletes none; the writer queue deletes those beyond `maxSpares`, and no more
    /// are left after `close`. On the code before, the open deleted all but two itself, on the
    /// opening thread.
    @Test func theOpenKeepsEveryReplayedSegmentAndCloseLeavesAtMostMaxSpares() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 80)
            let replayed = try LogTest.segments(directory).count
            try #require(replayed > SegmentRecycler.maxSpares + 2)
            let fileSystem = HookedFileSystem()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(fileSystem: fileSystem))
            #expect(store.recoveryReport.recordsReplayed == 80)
            #expect(!fileSystem.removals.withLock { $0 }.contains { pthread_equal($0.thread, fileSystem.opener) != 0 },
                    "the opening thread deleted a segment")
            // The trim waits at its first deletion: all but the one the new log took are spares.
            #expect(try Self.spares(directory).count >= replayed - 1)
            fileSystem.releaseTrim.signal()
            for n in 0..<80 {
                #expect(try store.image(for: LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data)
            }
            store.close()
            #expect(try Self.spares(directory).count <= SegmentRecycler.maxSpares)
            #expect(fileSystem.removals.withLock { $0.count } >= replayed - SegmentRecycler.maxSpares - 1,
                    "the writer queue deleted the spares beyond maxSpares")
        }
    }

    /// The log's leader takes the first spare when it rolls while the trim deletes the others:
    /// here the trim deletes the very spare the leader listed first, between its listing and
    /// its rename. The leader passes over it, and every put is acknowledged and kept. On the
    /// code before the fix, the rename failed with ENOENT and the log stopped (`logFailed`).
    @Test func aSpareDeletedUnderTheLeadersRenameIsPassedOver() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 80)
            try #require(try LogTest.segments(directory).count > SegmentRecycler.maxSpares + 2)
            let fileSystem = HookedFileSystem()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(fileSystem: fileSystem))
            // The trim listed the spares and waits before deleting its first (the third listed):
            // the leader reaches that one after taking the two before it.
            let deadline = Date(timeIntervalSinceNow: 10)
            while fileSystem.removals.withLock({ $0.isEmpty }) && Date() < deadline { usleep(1_000) }
            let held = try #require(fileSystem.removals.withLock { $0.first?.path })
            fileSystem.heldSpare.withLock { $0 = held }
            var n = 1_000
            while !fileSystem.renamedAfterDeletion.withLock({ $0 }) && n < 1_200 {
                try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url)
                n += 1
            }
            #expect(fileSystem.renamedAfterDeletion.withLock { $0 }, "the leader never reached the held spare")
            for more in n..<(n + 20) { try store.put(LogTest.smallEntry(more).data, for: LogTest.smallEntry(more).url) }
            store.close()
            let reopened = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { reopened.close() }
            for m in Array(0..<80) + Array(1_000..<(n + 20)) {
                #expect(try reopened.image(for: LogTest.smallEntry(m).url)?.data == LogTest.smallEntry(m).data, "entry \(m)")
            }
        }
    }

    /// Reopening after the trim replays nothing and finds every entry: the spares the open kept
    /// were never read as log.
    @Test func keptSparesAreNotReadAsLog() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 80)
            let first = try ImageStore(path: directory, configuration: LogTest.configuration())
            let spares = try Self.spares(directory).count
            #expect(spares >= SegmentRecycler.maxSpares, "the replayed segments were kept as spares")
            first.abandonForTesting()  // a crash right after the open, before or after the trim
            let second = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { second.close() }
            #expect(second.recoveryReport.recordsReplayed == 0)
            for n in 0..<80 {
                #expect(try second.image(for: LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data)
            }
        }
    }
}
