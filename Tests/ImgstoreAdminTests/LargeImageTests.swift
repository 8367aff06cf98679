import Foundation
import ImageStoreTestSupport
import Testing

/// `get` of the largest image a store takes writes it from the store's memory map, in chunks:
/// to standard output and with `-o`, the process never holds a copy of it.
@Suite struct LargeImageTests {
    /// The tool's per-entry limit (`maxEntryBytes`, 64 MiB): the largest image it can get.
    private static let size = 64 << 20
    private let url = "https://x.test/large.png"

    /// A valid PNG of `size` bytes: a fixture followed by patterned bytes after its end (which
    /// the default, lenient validation keeps), so a misplaced chunk shows in the comparison.
    private static func largeImage() throws -> Data {
        var image = try Fixtures.image("shapes.png")
        var generator = SeededGenerator(seed: 14)
        image.append(generator.bytes(size - image.count))
        return image
    }

    /// Run with its data limit (`ulimit -d`: private writable memory, `RLIMIT_DATA`) at half the
    /// image, `get` cannot hold a copy of it; the store's map is a shared file mapping, which the
    /// limit does not count. Before the borrowing read, `get` copied the image into a `Data` and
    /// trapped there (status 132) at any limit up to 64 MiB.
    @Test func getWritesALargeImageFromTheMapWithoutAWholeCopy() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let image = try Self.largeImage()
            try image.write(to: URL(fileURLWithPath: directory + "/large.png"))
            let put = try AdminBinary.run(["--store", store, "put", url, directory + "/large.png"])
            try #require(put.status == 0, "\(put.standardError)")
            try #require(try AdminBinary.run(["--store", store, "checkpoint"]).status == 0)
            let limitKiB = String(Self.size / 2 / 1024)

            let toFile = try AdminBinary.shell(#"ulimit -d "$1" && exec "$ADMIN" --store "$2" get "$3" -o "$4""#,
                                               [limitKiB, store, url, directory + "/out.png"])
            #expect(toFile.status == 0, "\(toFile.standardError)")
            #expect(toFile.standardError.isEmpty)
            #expect(FileManager.default.contents(atPath: directory + "/out.png") == image, "get -o wrote the image whole")

            let toStandardOutput = try AdminBinary.shell(#"ulimit -d "$1" && exec "$ADMIN" --store "$2" get "$3" > "$4""#,
                                                         [limitKiB, store, url, directory + "/stdout.png"])
            #expect(toStandardOutput.status == 0, "\(toStandardOutput.standardError)")
            #expect(FileManager.default.contents(atPath: directory + "/stdout.png") == image, "get wrote the image whole")
        }
    }

    /// A pipe takes at most its buffer per write: the image still arrives whole, in order.
    @Test func getThroughAPipeDeliversALargeImageWhole() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let image = try Self.largeImage()
            let put = try AdminBinary.run(["--store", store, "put", url, "-"], input: image)
            try #require(put.status == 0, "\(put.standardError)")
            let get = try AdminBinary.run(["--store", store, "get", url])
            #expect(get.status == 0, "\(get.standardError)")
            #expect(get.standardOutput == image)
        }
    }
}
