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
}
