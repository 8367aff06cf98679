import Foundation
import ImageStoreTestSupport
import Testing

/// What scripts rely on: messages that name the tool's flags, one-line errors, JSON of fixed
/// shape, help that lists every command in clean columns.
@Suite struct ConventionTests {
    // MARK: - Help and global options

    @Test func topLevelHelpListsEveryCommandInItsOwnColumn() throws {
        let help = try AdminBinary.run(["--help"])
        #expect(help.status == 0)
        let commandLines = help.output.split(separator: "\n", omittingEmptySubsequences: false).drop { $0 != "commands:" }.dropFirst().prefix { !$0.isEmpty }
        let names = commandLines.map { $0.split(separator: " ").first.map(String.init) ?? "" }
        #expect(names == ["demo", "put", "get", "rm", "ls", "stats", "validate", "expire", "wal", "checkpoint", "fetch",
                          "import", "export", "warm", "verify", "quarantine", "compact", "readers"])
        let summaryColumns = Set(commandLines.map { line in
            let afterName = line.dropFirst(2).drop { $0 != " " }
            #expect(afterName.hasPrefix("  "), "at least two spaces after the name: \(line)")
            return line.count - afterName.drop { $0 == " " }.count
        })
        #expect(summaryColumns.count == 1, "every summary starts in the same column")
    }

    /// The exit statuses `--help` lists are the README's: the same numbers (fetch's and
    /// verify's included), so a script written from either handles every status.
    @Test func topLevelHelpsExitStatusesAreTheREADMEs() throws {
        let help = try AdminBinary.run(["--help"]).output
        let table = try #require(help.range(of: "exit status:")).upperBound
        let helpStatuses = Self.numbers(in: String(help[table...]), pattern: #"(?m)^\s+(\d+)\s|, (\d+) |(\d+) (?:operational|usage error|clean|all repaired|problems left|no problems)"#)
        let readme = try String(contentsOfFile: Fixtures.repositoryRoot + "/README.md", encoding: .utf8)
        let start = try #require(readme.range(of: "Exit status: ")).lowerBound
        let end = try #require(readme.range(of: "### `--json` shapes")).lowerBound
        let readmeStatuses = Self.numbers(in: String(readme[start..<end]), pattern: #"\*\*(\d+)\*\*"#)
        #expect(readmeStatuses == [0, 1, 4, 8, 9, 12, 16, 64, 65, 66, 69, 74, 77])
        #expect(helpStatuses == readmeStatuses, "help: \(help[table...])")
        for phrase in ["404 or 410", "fetch's origin", "9 all repaired", "12 problems left"] {
            #expect(help.contains(phrase), "help names \(phrase)")
        }
    }

    private static func numbers(in text: String, pattern: String) -> Set<Int> {
        let regex = try! NSRegularExpression(pattern: pattern)
        var found: Set<Int> = []
        for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            for group in 1..<match.numberOfRanges {
                if let range = Range(match.range(at: group), in: text), let value = Int(text[range]) { found.insert(value) }
            }
        }
        return found
    }

    @Test func aMistypedGlobalOptionIsAnUnknownOption() throws {
        let result = try AdminBinary.run(["--stor", "x", "ls"])
        #expect(result.status == 64)
        #expect(result.standardError == "imgstore-admin: unknown option --stor (see imgstore-admin --help)\n")
    }

    // MARK: - Messages

    @Test func anotherWritersLockNamesWhatToDoWithTheTool() throws {
        try withTemporaryDirectory { directory throws in
            let holder = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-writer", directory])
            #expect(holder.wait(for: "ready"))
            defer { holder.kill() }
            let put = try AdminBinary.run(["--store", directory, "put", "https://x.test/a.png", Fixtures.directory + "/shapes.png"])
            #expect(put.status == 74)
            #expect(put.standardError == "imgstore-admin put: the store at \(directory) is open for writing by another process (pid \(holder.processIdentifier)); stop it first, or use a read command (ls, get, stats, verify without --repair)\n")
        }
    }

    /// Every command that opens the store for writing says what to do in the tool's terms when
    /// another process writes it: never the library's "open it read-only" (there is no such
    /// flag). `verify --repair` printed exactly that, with status 8.
    static let writingCommands: [([String], Int32)] = [
        (["put", "https://x.test/a.png", Fixtures.directory + "/shapes.png"], 74),
        (["rm", "https://x.test/a.png"], 74), (["expire"], 74), (["checkpoint"], 74),
        (["quarantine", "--purge"], 74), (["import", Fixtures.directory], 74), (["verify", "--repair"], 8),
    ]

    @Test(arguments: writingCommands)
    func everyWritingCommandBesideAWriterNamesWhatToDoWithTheTool(arguments: [String], status: Int32) throws {
        try withTemporaryDirectory { directory throws in
            let holder = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-writer", directory])
            #expect(holder.wait(for: "ready"))
            defer { holder.kill() }
            let result = try AdminBinary.run(["--store", directory] + arguments)
            #expect(result.status == status, "\(result.standardError)")
            #expect(result.standardError == "imgstore-admin \(arguments[0]): the store at \(directory) is open for writing by another process (pid \(holder.processIdentifier)); stop it first, or use a read command (ls, get, stats, verify without --repair)\n")
        }
    }

    @Test func aLongMalformedURLIsExcerptedOnOneLine() throws {
        try withTemporaryDirectory { directory throws in
            let long = "https://x.test/a\n" + String(repeating: "a", count: 100_000)
            let result = try AdminBinary.run(["--store", directory + "/s", "put", long, Fixtures.directory + "/shapes.png"])
            #expect(result.status == 65)
            #expect(result.standardError.hasPrefix("imgstore-admin put: The URL \"https://x.test/a\\na"))
            #expect(result.standardError.count < 400, "the URL is not echoed whole")
            #expect(result.standardError.filter { $0 == "\n" }.count == 1, "one line")
        }
    }

    @Test func aURLWithControlCharactersIsEchoedOnOneLine() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let result = try AdminBinary.run(["--store", store, "get", "https://x.test/a\nb\u{1B}[31m.png"])
            #expect(result.status == 65)
            #expect(result.standardError.hasPrefix("imgstore-admin get: The URL \"https://x.test/a\\nb\\u{1B}[31m.png\" is malformed"))
            #expect(result.standardError.filter { $0 == "\n" || $0 == "\u{1B}" }.count == 1, "one line, no escape sequence")
            let ls = try AdminBinary.run(["--store", store, "rm", "https://x.test/tab\there"])
            #expect(ls.standardError.hasPrefix("imgstore-admin rm: The URL \"https://x.test/tab\\there\""), "\(ls.standardError)")
        }
    }

    // MARK: - put --ttl --durability

    @Test func putTakesTTLAndDurability() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let put = try AdminBinary.run(["--store", store, "put", "--ttl", "3600", "--durability", "batched",
                                           "https://x.test/a.png", Fixtures.directory + "/shapes.png"])
            #expect(put.status == 0, "\(put.standardError)")
            let never = try AdminBinary.run(["--store", store, "put", "--ttl", "never", "https://x.test/b.png", Fixtures.directory + "/shapes.png"])
            #expect(never.status == 0, "\(never.standardError)")
            let list = try AdminBinary.run(["--store", store, "ls", "--json"])
            let objects = try #require(try JSONSerialization.jsonObject(with: list.standardOutput) as? [[String: Any]])
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let created = try #require((objects[0]["createdAt"] as? String).flatMap(formatter.date(from:)))
            let expires = try #require((objects[0]["expiresAt"] as? String).flatMap(formatter.date(from:)))
            #expect(abs(expires.timeIntervalSince(created) - 3600) < 0.002)
            #expect(objects[1]["expiresAt"] is NSNull)
            let bad = try AdminBinary.run(["--store", store, "put", "--durability", "often", "https://x.test/c.png", Fixtures.directory + "/shapes.png"])
            #expect(bad.standardError == "imgstore-admin put: --durability must be sync, batched or none; got 'often' (see imgstore-admin --help)\n")
        }
    }

    // MARK: - JSON

    @Test func jsonShapesHaveFixedKeysAndFractionalSecondDates() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let list = try AdminBinary.run(["--store", store, "ls", "--json"])
            let entries = try #require(try JSONSerialization.jsonObject(with: list.standardOutput) as? [[String: Any]])
            #expect(entries.count == 7)
            let entryKeys: Set<String> = ["url", "bytes", "checksum", "createdAt", "expiresAt", "lastAccessedAt", "format", "width", "height"]
            let datePattern = #/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/#
            for entry in entries {
                #expect(Set(entry.keys) == entryKeys)
                #expect((entry["createdAt"] as? String)?.wholeMatch(of: datePattern) != nil, "\(entry["createdAt"] ?? "")")
                #expect((entry["expiresAt"] as? String)?.wholeMatch(of: datePattern) != nil)
            }
            let stats = try AdminBinary.run(["--store", store, "stats", "--json"])
            let statsObject = try #require(try JSONSerialization.jsonObject(with: stats.standardOutput) as? [String: Any])
            #expect(Set(statsObject.keys) == ["path", "entryCount", "logicalBytes", "expiredEntries", "expiredBytes", "dataFileBytes",
                                             "diskBytes", "usedBytes", "occupiedBytes", "mapSize", "maxMapSize", "maxDiskBytes", "sharedTier"])
            #expect(statsObject["maxDiskBytes"] is NSNull)
            #expect(statsObject["sharedTier"] is NSNull)
            let wal = try AdminBinary.run(["--store", store, "wal", "--json"])
            let walObject = try #require(try JSONSerialization.jsonObject(with: wal.standardOutput) as? [String: Any], "\(wal.standardError)")
            #expect(Set(walObject.keys) == ["segments", "spareSegments", "bytes"])
            let verify = try AdminBinary.run(["--store", store, "verify", "--json"])
            let verifyObject = try #require(try JSONSerialization.jsonObject(with: verify.standardOutput) as? [String: Any])
            #expect(Set(verifyObject.keys) == ["ok", "entriesChecked", "logSegmentsChecked", "tornLogBytes", "problems", "counts"])
        }
    }

    // MARK: - stats, compact, verify

    @Test func statsReportsTheStoresFactsAndItsRealDiskUse() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let text = try AdminBinary.run(["--store", store, "stats"])
            #expect(!text.output.contains("hit"), "a CLI process's hit counters say nothing about the store")
            let json = try AdminBinary.run(["--store", store, "stats", "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: json.standardOutput) as? [String: Any])
            var total = 0
            for name in try FileManager.default.contentsOfDirectory(atPath: store) {
                var info = stat()
                #expect(stat(store + "/" + name, &info) == 0)
                total += Int(info.st_blocks) * 512
            }
            #expect(object["diskBytes"] as? Int == total, "every file of the store, spare log segments included")
            #expect((object["diskBytes"] as? Int ?? 0) > (object["dataFileBytes"] as? Int ?? 0))
            #expect(text.output.contains("disk bytes:    \(total) (all files of the store)"), "\(text.output)")
        }
    }

    @Test func compactDryRunWorksWhileAWriterRuns() throws {
        try withTemporaryDirectory { directory throws in
            let holder = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-writer", directory])
            #expect(holder.wait(for: "ready"))
            defer { holder.kill() }
            let result = try AdminBinary.run(["--store", directory, "compact", "--dry-run"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.output.hasPrefix("would shrink data.mdb from "))
        }
    }

    /// Every read command works while another process holds the store as its writer: none of
    /// them takes writer.lock or waits for it.
    @Test(arguments: [
        ["ls"], ["ls", "--json"], ["get", "https://demo.imgstore.invalid/fixtures/shapes.png"], ["stats"], ["stats", "--json"],
        ["verify"], ["verify", "--json"], ["wal"], ["quarantine"], ["expire", "--dry-run"], ["readers"], ["export", "OUT"],
    ])
    func everyReadCommandWorksBesideAWriter(arguments: [String]) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let holder = try ChildProcess.Collecting(ChildProcess.product("imgstore-test-child"), ["hold-writer", store])
            #expect(holder.wait(for: "ready"))
            defer { holder.kill() }
            let result = try AdminBinary.run(["--store", store] + arguments.map { $0 == "OUT" ? directory + "/out" : $0 })
            #expect(result.status == 0, "\(arguments): \(result.standardError)")
            // (quarantine lists nothing: the demo store has no quarantined entry.)
            if arguments != ["quarantine"] { #expect(!result.standardOutput.isEmpty, "\(arguments) printed its answer") }
        }
    }

    @Test func verifyPrintsItsSummaryOnceOnStdout() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDamagedDemoStore(store)
            let text = try AdminBinary.run(["--store", store, "verify"])
            #expect(text.status == 4)
            #expect(text.standardError == "")
            #expect(text.output.split(separator: "\n").filter { $0.contains("problem(s)") }.count == 1)
            let json = try AdminBinary.run(["--store", store, "verify", "--json"])
            #expect(json.status == 4)
            #expect(json.standardError == "")
            #expect(json.output.split(separator: "\n").count == 1)
        }
    }
}
