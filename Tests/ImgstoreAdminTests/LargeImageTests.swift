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

    /// The bytes of the binary's own writable segments (ELF `PT_LOAD` with `PF_W`). `RLIMIT_DATA`
    /// counts them from exec on, before `get` allocates anything. They are a few hundred KiB in a
    /// dynamic build, and about 39 MB in a build that links Foundation statically (`-static-stdlib`,
    /// tried and not kept, see the README's validator section): Swift objects mark their `.rodata` writable, and the linker merges ICU's 37 MB of data into it.
    private static func writableSegmentBytes(of path: String) throws -> Int {
        let elf = try Data(contentsOf: URL(fileURLWithPath: path))
        func int(_ at: Int, _ width: Int) -> Int {   // ELF64, little-endian (x86-64, AArch64)
            (0..<width).reduce(0) { $0 | Int(elf[elf.startIndex + at + $1]) << (8 * $1) }
        }
        try #require(elf.count > 64 && elf.prefix(4) == Data([0x7F, 0x45, 0x4C, 0x46]) && elf[elf.startIndex + 4] == 2
                     && elf[elf.startIndex + 5] == 1, "\(path) is not a little-endian ELF64 executable")
        let table = int(32, 8), entrySize = int(54, 2), entries = int(56, 2)
        try #require(table + entries * entrySize <= elf.count, "\(path): program headers past the end of the file")
        return (0..<entries).reduce(0) { total, index in
            let entry = table + index * entrySize
            let isWritableLoad = int(entry, 4) == 1 && int(entry + 4, 4) & 2 != 0   // PT_LOAD, PF_W
            return total + (isWritableLoad ? int(entry + 40, 8) : 0)                // p_memsz
        }
    }

    /// Run with its data limit (`ulimit -d`: private writable memory, `RLIMIT_DATA`) at half the
    /// image above the binary's own writable segments, `get` cannot hold a copy of it; the store's
    /// map is a shared file mapping, which the limit does not count. Before the borrowing read, `get` copied the image into a `Data` and
    /// trapped there (status 132) at any limit up to 64 MiB.
    @Test func getWritesALargeImageFromTheMapWithoutAWholeCopy() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let image = try Self.largeImage()
            try image.write(to: URL(fileURLWithPath: directory + "/large.png"))
            let put = try AdminBinary.run(["--store", store, "put", url, directory + "/large.png"])
            try #require(put.status == 0, "\(put.standardError)")
            try #require(try AdminBinary.run(["--store", store, "checkpoint"]).status == 0)
            let limitKiB = String((try Self.writableSegmentBytes(of: AdminBinary.path) + Self.size / 2) / 1024)

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
