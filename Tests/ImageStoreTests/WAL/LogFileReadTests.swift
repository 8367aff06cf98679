import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Testing

/// Reading a segment whole into a buffer that recovery reuses from one segment to the next.
@Suite struct LogFileReadTests {
    private static func write(_ bytes: [UInt8], to path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// A buffer large enough is read into in place: the file's bytes come first, the count says
    /// how many, and the storage is the same (recovery's pages are faulted in once, not per
    /// segment). One too small is replaced by one of the file's size.
    @Test func aSegmentIsReadIntoTheStartOfABufferThatIsReused() throws {
        try withTemporaryDirectory { directory throws in
            let long = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
            let short = (0..<4_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
            try Self.write(long, to: directory + "/long")
            try Self.write(short, to: directory + "/short")
            let files = PosixLogFileSystem()
            var buffer = Data()

            let first = try files.open(directory + "/long", preallocate: 0)
            defer { first.close() }
            #expect(try first.readAll(into: &buffer) == long.count)
            #expect(buffer == Data(long))
            let storage = buffer.withUnsafeBytes { $0.baseAddress }

            let second = try files.open(directory + "/short", preallocate: 0)
            defer { second.close() }
            #expect(try second.readAll(into: &buffer) == short.count)
            #expect(buffer.prefix(short.count) == Data(short))
            #expect(buffer.withUnsafeBytes { $0.baseAddress } == storage, "a large enough buffer was replaced")

            // The buffer is still 10 000 bytes long: reused again, it holds the long file whole.
            #expect(try first.readAll(into: &buffer) == long.count)
            #expect(buffer == Data(long))

            var small = Data(repeating: 0, count: 16)
            #expect(try first.readAll(into: &small) == long.count)
            #expect(small == Data(long), "a buffer too small is replaced by one holding the file")
            #expect(try first.readAll() == long)
        }
    }

    /// `readPrefix` gives the file's first bytes, or all of a shorter file. Files of a few bytes
    /// (a log truncated in a test, or by a crash) count: a `Data` that small keeps its bytes
    /// inline and frees the buffer it was given at once, so reading into that buffer after
    /// wrapping it wrote into freed memory and returned garbage (found by
    /// `LogRecoveryTests.truncatingTheLogAtEveryOffset…` as a corrupted heap).
    @Test(arguments: [0, 1, 5, 14, 15, 16, 100, 10_000])
    func readPrefixGivesTheFirstBytesOfAFileOfAnySize(size: Int) throws {
        try withTemporaryDirectory { directory throws in
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) }
            try Self.write(bytes, to: directory + "/file")
            let file = try PosixLogFileSystem().open(directory + "/file", preallocate: 0)
            defer { file.close() }
            #expect(try file.readPrefix(8) == Data(bytes.prefix(8)))
            #expect(try file.readPrefix(size + 1) == Data(bytes))
            #expect(try file.readPrefix(4_096) == Data(bytes.prefix(4_096)))
        }
    }
}
