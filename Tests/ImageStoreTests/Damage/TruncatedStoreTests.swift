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
            try Self.cutAndRunEveryCommand(path, size: size)
        }
    }

    /// A file that ends in free pages (here an entry of many pages, written at the end of the
    /// file and removed) is whole without them; a cut from the end of the pages a tree can
    /// reach is damage. Whether `makeStore`'s file ends in free pages depends on how its puts
    /// were batched: this store always does.
    @Test(arguments: [-4096, -1])
    func aCutIntoTheLastPageInUseOfAFileEndingInFreePagesIsACorruptStore(size: Int) throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store"
            try AdminRun.makeStore(at: path, count: 40)
            do {
                let store = try ImageStore(path: path, configuration: makeConfiguration())
                // Free pages first (reusable once a checkpoint follows the next commit), so that
                // the large entry's removal takes its few pages from them. Each step is applied in
                // commits of its own. No run of free pages is 2 MiB long: the entry goes at the end.
                for n in 10..<30 { #expect(try store.remove("https://damage.test/images/\(n).bin")) }
                try store.checkpoint()
                var random = SeededGenerator(seed: 3)
                try store.put(random.bytes(2 << 20), for: "https://damage.test/large.bin")
                try store.checkpoint()
                #expect(try store.remove("https://damage.test/large.bin"))
                try store.checkpoint()
                store.close()
            }
            let (lastPage, inUse) = try Self.pages(path)
            try #require(inUse < lastPage + 1, "the file ends in free pages (\(lastPage + 1) pages, \(inUse) in use)")
            try Self.cutAndRunEveryCommand(path, size: size)
        }
    }

    /// Cuts `data.mdb` to `size` bytes (from its start; from the end of the pages in use when
    /// negative) and runs every command, which must each report the damage.
    private static func cutAndRunEveryCommand(_ path: String, size: Int) throws {
        let file = path + "/data.mdb"
        // Cuts from the end are taken from the end of the pages a tree can reach: the file may
        // end in free pages (freed while a checkpoint pinned its snapshot), whose loss is no damage.
        let full = try pages(path).inUse * 4096
        let cut = size > 0 ? size : full + size
        try #require(cut < full, "the store (\(full) bytes) is larger than the cut")
        #expect(truncate(file, off_t(cut)) == 0)
        for (arguments, expected) in commands {
            let outcome = try AdminRun.run(path, arguments)
            #expect(outcome.status == expected, "\(outcome) after cutting data.mdb from \(full) to \(cut) bytes")
        }
    }

    /// The last page number of the store at `path` (`me_last_pgno`), and the pages up to the
    /// last one not on the free list (the last a tree may reach), in a read-only environment.
    private static func pages(_ path: String) throws -> (last: Int, inUse: Int) {
        var options = EnvironmentOptions()
        options.readOnly = true
        let environment = try Environment.open(path: path, options: options)
        let statistics = try environment.statistics()
        try #require(statistics.pageSize == 4096)
        let free = try environment.read { txn in try txn.freePageNumbers() }
        var last = statistics.lastPageNumber
        while free.contains(last) { last -= 1 }
        return (statistics.lastPageNumber, last + 1)
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
