import Foundation
import ImageStoreTestSupport
import Testing

/// `put --max-disk-bytes N`: a put is stored and kept, or refused before anything is logged or
/// evicted; never acknowledged and then evicted by its own budget (probe14 #4, #5).
@Suite struct DiskBudgetPutTests {
    private let url = "https://x.test/p.jpg"

    // MARK: - A put the budget would evict at once is refused

    /// Failed before (probe14 #4): the 7,660-byte JPEG passed the per-entry limit (0.9·N), so the
    /// put printed "stored …" and exited 0, but the store's own pages plus the entry's were over
    /// the budget, and the eviction after the put removed the entry just acknowledged (`get`: 1).
    @Test(arguments: ["20000", "40000"])
    func aPutThatCannotFitUnderTheBudgetIsRefusedNotAcknowledged(budget: String) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let put = try AdminBinary.run(["--store", store, "put", "--max-disk-bytes", budget, url, Fixtures.directory + "/photo-baseline.jpg"])
            #expect(put.status == 74, "stdout: \(put.output) stderr: \(put.standardError)")
            #expect(put.output == "")
            #expect(put.standardError.hasPrefix("imgstore-admin put: "))
            #expect(put.standardError.contains("--max-disk-bytes \(budget)"), "\(put.standardError)")
            #expect(put.standardError.contains("7660 bytes"), "\(put.standardError)")
            #expect(!put.standardError.contains("per entry"), "\(put.standardError)")
            #expect(!put.standardError.contains("Configuration."), "\(put.standardError)")
            #expect(put.standardError.hasSuffix("\n") && put.standardError.split(separator: "\n").count == 1)
            let get = try AdminBinary.run(["--store", store, "get", url])
            #expect(get.status == 1, "nothing was stored: \(get.standardError)")
            let stats = try AdminBinary.run(["--store", store, "stats", "--json"])
            #expect(try Self.number("entryCount", in: stats) == 0)
        }
    }

    /// Failed before for budgets up to about 45 KB (probe14 #4): every budget from 9 KB to 75 KB
    /// either refuses the put (exit 74, stdout empty) or stores it and the entry is there
    /// afterwards, byte for byte.
    @Test func everyBudgetEitherRefusesThePutOrKeepsTheEntry() throws {
        let image = try Fixtures.image("photo-baseline.jpg")
        var refused: [Int] = []
        var kept: [Int] = []
        try withTemporaryDirectory { directory throws in
            for budget in stride(from: 9000, through: 75000, by: 3000) {
                let store = directory + "/s\(budget)"
                let put = try AdminBinary.run(["--store", store, "put", "--max-disk-bytes", "\(budget)", url, Fixtures.directory + "/photo-baseline.jpg"])
                if put.status == 0 {
                    let get = try AdminBinary.run(["--store", store, "get", url])
                    #expect(get.status == 0 && get.standardOutput == image, "--max-disk-bytes \(budget): acknowledged, then gone (get: \(get.status) \(get.standardError))")
                    kept.append(budget)
                } else {
                    #expect(put.status == 74, "--max-disk-bytes \(budget): \(put.standardError)")
                    #expect(put.output == "")
                    refused.append(budget)
                }
            }
        }
        #expect(!refused.isEmpty && !kept.isEmpty, "refused \(refused), kept \(kept)")
        #expect(refused.allSatisfy { r in kept.allSatisfy { r < $0 } }, "a smaller budget kept what a larger one refused: refused \(refused), kept \(kept)")
    }

    // MARK: - A refused put evicts nothing, and its message names the flag

    /// Failed before (probe14 #5): the refusal said "over the limit of 0 bytes per entry" (65),
    /// a limit the user never set, and the open had already evicted old.png, so a command that
    /// failed emptied the store.
    @Test func aRefusedPutNamesTheBudgetAndEvictsNothing() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let old = try AdminBinary.run(["--store", store, "put", "https://x.test/old.png", Fixtures.directory + "/shapes.png"])
            #expect(old.status == 0, "\(old.standardError)")
            let put = try AdminBinary.run(["--store", store, "put", "--max-disk-bytes", "1", "https://x.test/new.png", Fixtures.directory + "/shapes.png"])
            #expect(put.status == 74, "\(put.standardError)")
            #expect(put.output == "")
            #expect(put.standardError.contains("--max-disk-bytes 1"), "\(put.standardError)")
            #expect(!put.standardError.contains("per entry"), "\(put.standardError)")
            #expect(put.standardError.contains("Nothing was stored or evicted"), "\(put.standardError)")
            let ls = try AdminBinary.run(["--store", store, "ls"])
            #expect(ls.status == 0)
            #expect(ls.output.contains("https://x.test/old.png"), "old.png was evicted by a put that failed: \(ls.output)")
            #expect(!ls.output.contains("new.png"))
        }
    }

    /// The same for a budget the store's entries are over, with an image too large for it: the
    /// refused put leaves every entry; a later put that fits evicts the least recently used.
    @Test func aStoreOverTheBudgetKeepsItsEntriesUntilAPutThatFits() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let before = try Self.number("entryCount", in: AdminBinary.run(["--store", store, "stats", "--json"]))
            #expect(before > 1)
            let big = try AdminBinary.run(["--store", store, "put", "--max-disk-bytes", "30000", url, Fixtures.directory + "/photo-baseline.jpg"])
            #expect(big.status == 74, "\(big.standardError)")
            #expect(try Self.number("entryCount", in: AdminBinary.run(["--store", store, "stats", "--json"])) == before, "a refused put evicted entries")
            let small = try AdminBinary.run(["--store", store, "put", "--max-disk-bytes", "40000", "https://x.test/small.png", Fixtures.directory + "/shapes.png"])
            #expect(small.status == 0, "\(small.standardError)")
            #expect(small.output.hasPrefix("stored https://x.test/small.png"))
            let after = try AdminBinary.run(["--store", store, "stats", "--json"])
            #expect(try Self.number("entryCount", in: after) < before, "the budget evicted nothing")
            #expect(try Self.number("occupiedBytes", in: after) <= 40000)
            let get = try AdminBinary.run(["--store", store, "get", "https://x.test/small.png"])
            let shapes = try Fixtures.image("shapes.png")
            #expect(get.status == 0 && get.standardOutput == shapes)
        }
    }

    private static func number(_ key: String, in result: ProcessResult) throws -> Int {
        let object = try #require(try JSONSerialization.jsonObject(with: result.standardOutput) as? [String: Any], "\(result.standardError)")
        return try #require(object[key] as? Int, "\(key) in \(result.output)")
    }
}
