import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Locking
import Testing

/// The open keeps every segment it replayed as a spare (a rename) and leaves deleting those
/// beyond `SegmentRecycler.maxSpares` to the writer queue: the open never waits for a deletion,
/// and no more than `maxSpares` spares outlive `close`.
@Suite struct LogSpareTrimTests {
    /// The real file system, noting the thread of every removal.
    private final class RemovalThreads: LogFileSystem {
        private let real = PosixLogFileSystem()
        let removals = LockedValue<[pthread_t]>([])

        func open(_ path: String, preallocate: Int) throws(LogIOError) -> any LogFile {
            try real.open(path, preallocate: preallocate)
        }
        func rename(_ from: String, to: String) throws(LogIOError) { try real.rename(from, to: to) }
        func remove(_ path: String) throws(LogIOError) {
            removals.withLock { $0.append(pthread_self()) }
            try real.remove(path)
        }
        func syncDirectory(_ directory: String) throws(LogIOError) { try real.syncDirectory(directory) }
        func contentsOfDirectory(_ directory: String) throws(LogIOError) -> [String] {
            try real.contentsOfDirectory(directory)
        }
    }

    private static func spares(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(SegmentRecycler.sparePrefix) }
    }

    /// A crash leaves a log of many 4 KiB segments. On the code before, the open deleted all
    /// but two of them itself, on the opening thread.
    @Test func theOpenDeletesNoSegmentAndCloseLeavesAtMostMaxSpares() throws {
        try withTemporaryDirectory { directory throws in
            try LogTest.makeCrashedStore(at: directory, count: 80)
            let replayed = try LogTest.segments(directory).count
            try #require(replayed > SegmentRecycler.maxSpares + 2)
            let fileSystem = RemovalThreads()
            let opener = pthread_self()
            let store = try ImageStore(path: directory, configuration: LogTest.configuration(fileSystem: fileSystem))
            #expect(store.recoveryReport.recordsReplayed == 80)
            #expect(!fileSystem.removals.withLock { $0 }.contains { pthread_equal($0, opener) != 0 },
                    "the opening thread deleted a segment")
            for n in 0..<80 {
                #expect(try store.image(for: LogTest.smallEntry(n).url)?.data == LogTest.smallEntry(n).data)
            }
            store.close()
            #expect(try Self.spares(directory).count <= SegmentRecycler.maxSpares)
            #expect(fileSystem.removals.withLock { $0.count } >= replayed - SegmentRecycler.maxSpares - 1,
                    "the writer queue deleted the spares beyond maxSpares")
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
