import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Testing

/// The zeros the log writes ahead of its write position (WriteAheadLog+ZeroAhead.swift): where
/// they go, when they stop, and that no record is ever lost to them.
@Suite struct LogZeroAheadTests {
    /// Whether `filefrag` is on `PATH` and shows preallocated blocks of the temporary
    /// directory's file system as unwritten extents (ext4 and XFS do; tmpfs does not).
    static let unwrittenExtentsVisible: Bool = {
        guard ToolsOnPath.find("filefrag") != nil else { return false }
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        let path = directory + "/probe"
        let fd = open(path, O_RDWR | O_CREAT, 0o644)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard posix_fallocate(fd, 0, 1 << 20) == 0 else { return false }
        do { return try !unwrittenRanges(path).isEmpty } catch { return false }
    }()

    private static func removeDirectory(_ directory: String) {
        do { try FileManager.default.removeItem(atPath: directory) } catch {
            Issue.record("removing \(directory): \(error)")
        }
    }

    /// The byte ranges `filefrag -v` reports as unwritten extents of the file at `path`.
    static func unwrittenRanges(_ path: String) throws -> [Range<Int>] {
        let result = try ChildProcess.run(ToolsOnPath.find("filefrag")!, ["-v", path])
        guard result.status == 0 else { throw ImageStoreError.storage(path: path, detail: "filefrag: \(result.standardError)") }
        let output = result.output
        // "File size of X is N (M blocks of 4096 bytes)"
        guard let blockMatch = output.firstMatch(of: /blocks of (\d+) bytes/), let blockBytes = Int(blockMatch.1) else {
            throw ImageStoreError.storage(path: path, detail: "filefrag said no block size: \(output)")
        }
        // "   0:        0..     511:     123456..    123967:    512:             unwritten,eof"
        return output.split(separator: "\n").compactMap { line in
            guard line.contains("unwritten"),
                  let match = line.firstMatch(of: /^\s*\d+:\s+(\d+)\.\.\s*(\d+):/),
                  let first = Int(match.1), let last = Int(match.2) else { return nil }
            return (first * blockBytes)..<((last + 1) * blockBytes)
        }
    }

    private static func makeLog(_ directory: String, segmentBytes: Int = 64 << 20) throws -> WriteAheadLog {
        let options = WriteAheadLog.Options(
            directory: directory, segmentBytes: segmentBytes, maxUnappliedBytes: 1 << 40,
            batchInterval: 3600, fileSystem: PosixLogFileSystem())
        let watermark = try SyncedWatermark.open(in: directory, fileSystem: PosixLogFileSystem(), found: nil, appliedSequence: 0)
        return try WriteAheadLog(options: options, firstSegment: 1, nextSequence: 1, watermark: watermark,
                                 onWritten: { _ in }, onFailed: { _ in })
    }

    /// Waits (at most 30 s) until the zeroer has written `bytes` of the open segment; returns
    /// how far it got.
    private static func waitForZeros(_ log: WriteAheadLog, through bytes: Int) -> Int {
        let deadline = Date(timeIntervalSinceNow: 30)
        var zeroed = log.withLock { log.state.zeroAhead.writtenThrough }
        while zeroed < bytes && Date() < deadline {
            usleep(2_000)
            zeroed = log.withLock { log.state.zeroAhead.writtenThrough }
        }
        return zeroed
    }

    /// Small synced records: the blocks after them are written (zeros) before the log reaches
    /// them, so their syncs change no extent; beyond the window, the segment stays unwritten
    /// (the zeroer keeps a window, it does not fill the file).
    @Test(.enabled(if: unwrittenExtentsVisible,
                   "needs filefrag (e2fsprogs) and a file system with unwritten extents (ext4, XFS) under the temporary directory"))
    func theBlocksAheadOfSmallSyncedRecordsAreWrittenBeforeTheLogReachesThem() throws {
        try withTemporaryDirectory { directory throws in
            let log = try Self.makeLog(directory)
            for n in 0..<20 { try log.append(.delete(cacheKey: "k\(n)"), durability: .sync) { _ in } }
            let zeroed = Self.waitForZeros(log, through: WriteAheadLog.aheadBytes)
            #expect(zeroed >= WriteAheadLog.aheadBytes)
            let unwritten = try Self.unwrittenRanges(directory + "/" + WALFormat.segmentName(1))
            #expect(!unwritten.contains { $0.lowerBound < WriteAheadLog.aheadBytes },
                    "unwritten extents \(unwritten) within the \(WriteAheadLog.aheadBytes) bytes ahead")
            #expect(unwritten.contains { $0.upperBound == 64 << 20 }, "the segment's end stays unwritten: \(unwritten)")
            _ = log.close()
        }
    }

    /// Batches of hundreds of kilobytes pay the extent change once per batch and would pay the
    /// zeros' bandwidth: the log writes none for them.
    @Test func aLogSyncingLargeBatchesWritesNoZerosAhead() throws {
        try withTemporaryDirectory { directory throws in
            let log = try Self.makeLog(directory)
            let large = String(repeating: "x", count: 512 << 10)
            for _ in 0..<20 { try log.append(.delete(cacheKey: large), durability: .sync) { _ in } }
            #expect(log.status().openSegmentBytes > 10 << 20)
            // The close waits for a chunk in flight, so one the zeroer started is counted.
            _ = log.close()
            #expect(log.zeroedChunks.load(ordering: .relaxed) == 0)
        }
    }

    /// Zeros must never land on a record: many writers of small synced records across many
    /// segment rolls (1 MiB segments, so the zeroer is often at work when a segment fills),
    /// then every acknowledged record is read back, after a clean close and after an abandon
    /// (`applyLog` off, so the reopened store replays every record from the log).
    @Test(arguments: [false, true])
    func everyRecordSurvivesTheZerosWrittenAheadOfIt(abandon: Bool) throws {
        try withTemporaryDirectory { directory throws in
            var configuration = LogTest.configuration()
            configuration.logSegmentBytes = 1 << 20
            configuration.applyLog = !abandon
            let store = try ImageStore(path: directory, configuration: configuration)
            let threads = 4
            let perThread = 300
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                for n in 0..<perThread {
                    let entry = LogTest.smallEntry(thread * perThread + n)
                    do { try store.put(entry.data, for: entry.url) } catch { Issue.record("put \(entry.url): \(error)") }
                }
            }
            let zeroedChunks = try #require(store.writes?.log).zeroedChunks.load(ordering: .relaxed)
            #expect(zeroedChunks > 0, "the zeroer wrote nothing: the test would prove nothing")
            if abandon { store.abandonForTesting() } else { store.close() }
            configuration.applyLog = true
            let reopened = try ImageStore(path: directory, configuration: configuration)
            defer { reopened.close() }
            if abandon { #expect(reopened.recoveryReport.recordsReplayed == threads * perThread) }
            var missing = 0
            for n in 0..<(threads * perThread) where try reopened.get(LogTest.smallEntry(n).url)?.data != LogTest.smallEntry(n).data {
                missing += 1
            }
            #expect(missing == 0, "\(missing) of \(threads * perThread) acknowledged images lost")
        }
    }
}
