import Foundation
import ImageStore
import ImageStoreTestSupport
import LMDB
import Testing

/// A `data.mdb` cut short (a failed copy, a full disk during a restore) is a damaged store that
/// every command reports — exit 74, and 4 from `verify` — never a SIGBUS from reading pages past
/// the end of the file.
@Suite struct TruncatedStoreTests {
    /// Every command a user might run against the damaged store, and the status it must end with.
    static let commands: [(arguments: [String], expected: Int32)] = [
        (["get", "https://damage.test/images/1.bin"], 74), (["ls"], 74), (["stats"], 74),
        (["put", "https://damage.test/new.png", Fixtures.directory + "/shapes.png"], 74),
        (["rm", "https://damage.test/images/2.bin"], 74), (["expire"], 74), (["compact"], 74),
        (["verify"], 4), (["verify", "--repair"], 4),
    ]

    // MARK: - Many sizes

    /// Sizes from one page to one byte short, including the 64 KiB of the report.
    @Test(arguments: [4096, 8192, 12_288, 65_536, 65_537, 131_072, -8192, -4096, -1])
    func aTruncatedDataFileIsACorruptStoreForEveryCommand(size: Int) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store"
            try AdminRun.makeStore(at: path)
            let file = path + "/data.mdb"
            // Cuts from the end are taken from the end of the pages in use: the file may end in
            // free pages (pages freed while a checkpoint pinned its snapshot), whose loss is not damage.
            let full = try Self.bytesInUse(path)
            let cut = size > 0 ? size : full + size
            try #require(cut < full, "the store (\(full) bytes) is larger than the cut")
            #expect(truncate(file, off_t(cut)) == 0)
            for (arguments, expected) in Self.commands {
                let outcome = try AdminRun.run(path, arguments)
                #expect(outcome.status == expected, "\(outcome) after cutting data.mdb from \(full) to \(cut) bytes")
            }
        }
    }

    /// The bytes of the pages LMDB has in use in the store at `path` (`me_last_pgno + 1` pages).
    private static func bytesInUse(_ path: String) throws -> Int {
        var options = EnvironmentOptions()
        options.readOnly = true
        return try Environment.open(path: path, options: options).statistics().usedBytes
    }

    @Test func theLibraryReportsTheCutAsCorruptStoreNamingTheSizes() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store"
            try AdminRun.makeStore(at: path)
            #expect(truncate(path + "/data.mdb", 65_536) == 0)
            for readOnly in [false, true] {
                var configuration = makeConfiguration()
                configuration.readOnly = readOnly
                #expect {
                    _ = try ImageStore(path: path, configuration: configuration)
                } throws: { error in
                    guard case let .corruptStore(_, detail) = error as? ImageStoreError else { return false }
                    return detail.contains("65536 bytes")
                }
            }
        }
    }
}
