import Foundation
import ImageStoreTestSupport
import Testing

/// `imgstore-admin import` and `export`, run as the built binary against real stores.
@Suite struct ImportExportTests {
    private let admin = AdminBinary.path

    private func run(_ arguments: [String]) throws -> ProcessResult {
        try ChildProcess.run(admin, arguments)
    }

    /// Every line of `result`'s stdout as a JSON object (each must parse).
    private func jsonLines(_ result: ProcessResult) throws -> [[String: Any]] {
        try result.output.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "not a JSON object: \($0)")
        }
    }

    /// `ls --json` of a store: its entry objects by URL.
    private func entries(_ store: String) throws -> [String: [String: Any]] {
        let list = try run(["--store", store, "ls", "--json"])
        #expect(list.status == 0, "\(list.standardError)")
        let objects = try #require(try JSONSerialization.jsonObject(with: list.standardOutput) as? [[String: Any]])
        return Dictionary(uniqueKeysWithValues: objects.map { ($0["url"] as! String, $0) })
    }

    private func write(_ data: Data, _ path: String) throws {
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// A tree of images to import: the fixture PNGs at the top, the JPEGs two levels down in a
    /// directory with a space, a PNG with a non-ASCII name and a `#`, a truncated PNG, a text file
    /// named `.jpg`, files import must ignore (not an image extension, hidden), and a symlink loop.
    private func makeTree(_ root: String) throws {
        for (name, data) in try Fixtures.images() {
            try write(data, root + (name.hasSuffix(".png") ? "/" : "/nested/sub dir/") + name)
        }
        try write(try Fixtures.image("shapes.png"), root + "/nested/sub dir/Ü#1.PNG")
        try write(try Fixtures.image("gradient-rgb.png").prefix(500), root + "/broken.png")
        try write(Data("hello, not an image\n".utf8), root + "/notes.jpg")
        try write(Data("ignored\n".utf8), root + "/readme.txt")
        try write(try Fixtures.image("shapes.png"), root + "/.hidden.png")
        try write(try Fixtures.image("shapes.png"), root + "/.cache/skipped.png")
        try FileManager.default.createSymbolicLink(atPath: root + "/nested/loop", withDestinationPath: "..")
    }

    private static let treeImports = [
        "gradient-rgb.png", "gray-alpha.png", "palette-16.png", "shapes.png",
        "nested/sub dir/gray-restart.jpg", "nested/sub dir/photo-baseline.jpg", "nested/sub dir/photo-progressive.jpg",
        "nested/sub dir/Ü#1.PNG",
    ]

    // MARK: - import

    @Test func importStoresEveryImageUnderItsURLAndSkipsBadFiles() throws {
        try withTemporaryDirectory { directory throws in
            let tree = directory + "/tree", store = directory + "/store"
            try makeTree(tree)
            let result = try run(["--store", store, "import", "--json", "--base-url", "https://cdn.test/img", tree])
            #expect(result.status == 65)
            #expect(result.standardError == "imgstore-admin import: 2 file(s) skipped as bad data\n")
            let lines = try jsonLines(result)
            let good = lines.filter { $0["ok"] as? Bool == true }
            let bad = lines.filter { $0["ok"] as? Bool == false }
            #expect(lines.count == 10, "one line per candidate file, nothing for readme.txt, hidden files or the loop")
            #expect(Set(good.compactMap { $0["path"] as? String }) == Set(Self.treeImports))
            let expectedURLs = [
                "shapes.png": "https://cdn.test/img/shapes.png",
                "nested/sub dir/photo-baseline.jpg": "https://cdn.test/img/nested/sub%20dir/photo-baseline.jpg",
                "nested/sub dir/Ü#1.PNG": "https://cdn.test/img/nested/sub%20dir/%C3%9C%231.PNG",
            ]
            for line in good {
                let path = try #require(line["path"] as? String)
                if let url = expectedURLs[path] { #expect(line["url"] as? String == url) }
                #expect((line["url"] as? String)?.hasPrefix("https://cdn.test/img/") == true)
                #expect(line["bytes"] as? Int == (try Data(contentsOf: URL(fileURLWithPath: tree + "/" + path))).count)
                #expect(["png", "jpeg"].contains(line["format"] as? String))
                #expect((line["width"] as? Int ?? 0) > 0 && (line["height"] as? Int ?? 0) > 0)
            }
            let photo = try #require(good.first { $0["path"] as? String == "nested/sub dir/photo-baseline.jpg" })
            #expect(photo["format"] as? String == "jpeg" && photo["width"] as? Int == 160 && photo["height"] as? Int == 120)
            #expect(Set(bad.compactMap { $0["path"] as? String }) == ["broken.png", "notes.jpg"])
            for line in bad { #expect((line["error"] as? String)?.contains("is not a valid image") == true) }

            let stored = try entries(store)
            #expect(Set(stored.keys) == Set(good.compactMap { $0["url"] as? String }), "exactly the ok files were stored")
        }
    }

    @Test func theDefaultBaseURLIsTheDirectoryAsAFileURL() throws {
        try withTemporaryDirectory { directory throws in
            let tree = directory + "/my images", store = directory + "/store"
            try write(try Fixtures.image("shapes.png"), tree + "/a b/c.png")
            let result = try run(["--store", store, "import", "--json", tree])
            #expect(result.status == 0, "\(result.standardError)")
            let absolute = URL(fileURLWithPath: directory).standardizedFileURL.path
            #expect(!absolute.contains(" ") && absolute.hasPrefix("/"))
            let lines = try jsonLines(result)
            #expect(lines.count == 1)
            #expect(lines.first?["url"] as? String == "file://\(absolute)/my%20images/a%20b/c.png")
            #expect(lines.first?["path"] as? String == "a b/c.png")
        }
    }

    @Test func withoutJSONItPrintsASummaryAndExitsZeroWhenEveryFileImports() throws {
        try withTemporaryDirectory { directory throws in
            let result = try run(["--store", directory + "/s", "import", Fixtures.directory])
            #expect(result.status == 0)
            #expect(result.standardError == "")
            #expect(result.output == "imported 7 of 7 files (0 skipped)\n")
            #expect(try entries(directory + "/s").count == 7)
        }
    }

    @Test func withoutJSONBadFilesAreNamedOnStderr() throws {
        try withTemporaryDirectory { directory throws in
            let tree = directory + "/tree"
            try makeTree(tree)
            let result = try run(["--store", directory + "/s", "import", "--base-url", "https://cdn.test/", tree])
            #expect(result.status == 65)
            #expect(result.output == "imported 8 of 10 files (2 skipped)\n")
            let stderr = result.standardError.split(separator: "\n")
            #expect(stderr.count == 3)
            #expect(stderr[0].hasPrefix("imgstore-admin import: skipped broken.png: The data for https://cdn.test/broken.png is not a valid image"))
            #expect(stderr[1].hasPrefix("imgstore-admin import: skipped notes.jpg: "))
            #expect(stderr[2] == "imgstore-admin import: 2 file(s) skipped as bad data")
        }
    }

    @Test(arguments: [("3600", 3600.0), ("never", nil), (nil, 7 * 86_400.0)] as [(String?, Double?)])
    func theTTLIsApplied(ttl: String?, seconds: Double?) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let start = Date()
            let result = try run(["--store", store, "import", "--base-url", "https://cdn.test/"] + (ttl.map { ["--ttl", $0] } ?? [])
                                 + [Fixtures.directory])
            #expect(result.status == 0, "\(result.standardError)")
            let stored = try entries(store)
            #expect(stored.count == 7)
            for (url, entry) in stored {
                if let seconds {
                    let expiresAt = try #require(try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(entry["expiresAt"] as? String ?? ""), "\(url)")
                    // ISO 8601 has whole seconds; allow for that and for the time the import took.
                    #expect(expiresAt.timeIntervalSince(start) > seconds - 2)
                    #expect(expiresAt.timeIntervalSince(Date()) < seconds + 2)
                } else {
                    #expect(entry["expiresAt"] is NSNull, "\(url) never expires")
                }
            }
        }
    }

    @Test(arguments: ["sync", "batched", "none"])
    func everyDurabilityModeImportsEverything(mode: String) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let result = try run(["--store", store, "import", "--json", "--durability", mode, Fixtures.directory])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try jsonLines(result).count == 7)
            for (name, data) in try Fixtures.images() {
                let url = try #require(try jsonLines(result).first { $0["path"] as? String == name }?["url"] as? String)
                #expect(try run(["--store", store, "get", url]).standardOutput == data)
            }
        }
    }

    @Test(arguments: [
        (["import", "--ttl", "0", "d"], "imgstore-admin import: --ttl needs a number of seconds greater than 0 and at most 3155760000 (100 years), or never; got '0' (see imgstore-admin --help)\n"),
        (["import", "--ttl", "soon", "d"], "imgstore-admin import: --ttl needs a number of seconds greater than 0 and at most 3155760000 (100 years), or never; got 'soon' (see imgstore-admin --help)\n"),
        (["import", "--durability", "fast", "d"], "imgstore-admin import: --durability must be sync, batched or none; got 'fast' (see imgstore-admin --help)\n"),
        (["import", "--manifest", "m.json", "--base-url", "https://x.test/", "d"], "imgstore-admin import: --manifest and --base-url cannot be used together (see imgstore-admin --help)\n"),
        (["import"], "imgstore-admin import: 'import' expects DIR, got 0 argument(s) (see imgstore-admin --help)\n"),
        (["export"], "imgstore-admin export: 'export' expects DIR, got 0 argument(s) (see imgstore-admin --help)\n"),
    ] as [([String], String)])
    func usageErrorsExit64(arguments: [String], stderr: String) throws {
        try withTemporaryDirectory { directory throws in
            let result = try run(["--store", directory + "/s"] + arguments)
            #expect(result.status == 64)
            #expect(result.standardError == stderr)
            #expect(result.output.isEmpty)
        }
    }

    @Test func aMissingDirectoryExits74() throws {
        try withTemporaryDirectory { directory throws in
            let result = try run(["--store", directory + "/s", "import", directory + "/nope"])
            #expect(result.status == 74)
            #expect(result.standardError == "imgstore-admin import: cannot read \(directory)/nope: no such directory\n")
        }
    }

    @Test func helpDocumentsBothCommandsAndTheirExitCodes() throws {
        let top = try run(["--help"])
        #expect(top.output.contains("\n  import ") && top.output.contains("\n  export "))
        let importHelp = try run(["import", "--help"])
        #expect(importHelp.status == 0)
        #expect(importHelp.output.hasPrefix("usage: imgstore-admin import [options] DIR\n"))
        for text in ["URL rule:", "--manifest FILE", "Exit status: 0", "65 some files", "74 a file", "imported N of M files (K skipped)"] {
            #expect(importHelp.output.contains(text), "\(text)")
        }
        let exportHelp = try run(["export", "--help"])
        #expect(exportHelp.output.hasPrefix("usage: imgstore-admin export [options] DIR\n"))
        for text in ["File names:", "manifest.json", "--force", "74 DIR cannot be created"] {
            #expect(exportHelp.output.contains(text), "\(text)")
        }
    }

    /// A real full disk (a 2 MiB tmpfs in a private mount namespace; needs root, as CI has): the
    /// import stops at the failing put with 74, and every file reported before it is readable.
    @Test(.enabled(if: Tools.isRoot, "needs root to mount a private tmpfs"))
    func aStoreFailureStopsTheImportWith74AndKeepsWhatWasReported() throws {
        try withTemporaryDirectory { directory throws in
            // A valid JPEG of a few MiB: random noise at quality 100, encoded by cjpeg.
            var random = SeededGenerator(seed: 2)
            let ppm = Data("P6\n1600 1200\n255\n".utf8) + random.bytes(1600 * 1200 * 3)
            try write(ppm, directory + "/noise.ppm")
            let tree = directory + "/tree"
            try write(try Fixtures.image("photo-baseline.jpg"), tree + "/a-small.jpg")
            let encode = try ChildProcess.run("/bin/sh", ["-c", "cjpeg -quality 100 \"$1\" > \"$2\"", "sh",
                                                          directory + "/noise.ppm", tree + "/b-big.jpg"])
            #expect(encode.status == 0, "cjpeg: \(encode.standardError)")
            let mount = directory + "/mnt"
            try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
            let script = """
                mount -t tmpfs -o size=2m tmpfs "$1" || exit 99
                "$2" --store "$1/s" import --json --base-url https://x.test/ "$3" 2>"$1/err"
                echo "import status=$?"
                cat "$1/err" >&2
                "$2" --store "$1/s" get https://x.test/a-small.jpg | cmp -s - "$3/a-small.jpg" && echo "small intact"
                """
            let result = try ChildProcess.run("/usr/bin/env", ["unshare", "-m", "/bin/sh", "-c", script, "sh", mount, admin, tree])
            #expect(result.status == 0, "\(result.output) \(result.standardError)")
            let lines = result.output.split(separator: "\n")
            try #require(lines.count == 4, "\(result.output)")
            let first = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
            let second = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
            #expect(first["ok"] as? Bool == true && first["path"] as? String == "a-small.jpg")
            #expect(second["ok"] as? Bool == false && second["path"] as? String == "b-big.jpg")
            #expect(lines[2] == "import status=74")
            #expect(lines[3] == "small intact")
            #expect(result.standardError.hasPrefix("imgstore-admin import: stopped after importing 1 of 2 files: The disk holding the store at \(mount)/s is full"),
                    "\(result.standardError)")
        }
    }

    /// Progress is drawn on a terminal (here a pseudo-terminal from script(1)) and nowhere else;
    /// the other tests check that stderr stays clean when it is a pipe.
    @Test func progressIsDrawnOnlyWhenStderrIsATerminal() throws {
        try withTemporaryDirectory { directory throws in
            let command = "'\(admin)' --store '\(directory)/s' import --base-url https://x.test/ '\(Fixtures.directory)'"
            let result = try ChildProcess.run("/usr/bin/env", ["script", "-qec", command, "/dev/null"])
            #expect(result.status == 0, "\(result.output) \(result.standardError)")
            #expect(result.output.contains("\r\u{1B}[Kimport 0/7 "), "\(result.output.debugDescription)")
            #expect(result.output.contains("imported 7 of 7 files (0 skipped)"))
        }
    }

    // MARK: - Manifests

    @Test func manifestEntriesThatAreUnsafeOrDoNotMatchAreReportedAndSkipped() throws {
        try withTemporaryDirectory { directory throws in
            let files = directory + "/files", store = directory + "/s"
            let shapes = try Fixtures.image("shapes.png")
            try write(shapes, files + "/ok.png")
            try write(shapes, directory + "/outside.png")
            let manifest: [String: Any] = ["entries": [
                ["file": "ok.png", "url": "https://x.test/ok", "bytes": shapes.count],
                ["file": "../outside.png", "url": "https://x.test/escape"],
                ["file": directory + "/outside.png", "url": "https://x.test/absolute"],
                ["file": "ok.png", "url": "https://x.test/wrong-size", "bytes": shapes.count + 1],
                ["file": "ok.png", "url": "no scheme"],
                ["file": "missing.png", "url": "https://x.test/missing"],
            ]]
            try write(try JSONSerialization.data(withJSONObject: manifest), directory + "/manifest.json")
            let result = try run(["--store", store, "import", "--json", "--manifest", directory + "/manifest.json", files])
            #expect(result.status == 74, "an unreadable file outranks bad data")
            let lines = try jsonLines(result)
            #expect(lines.map { $0["ok"] as? Bool } == [true, false, false, false, false, false])
            #expect((lines[1]["error"] as? String)?.hasPrefix("unsafe file name") == true)
            #expect((lines[2]["error"] as? String)?.hasPrefix("unsafe file name") == true)
            #expect(lines[3]["error"] as? String == "the file has \(shapes.count) bytes, the manifest says \(shapes.count + 1)")
            #expect((lines[4]["error"] as? String)?.contains("is malformed") == true)
            #expect(lines[5]["error"] as? String == "cannot read \(files)/missing.png: no such file")
            #expect(Array(try entries(store).keys) == ["https://x.test/ok"])
        }
    }

    @Test func aManifestOfTheWrongShapeExits65BeforeStoringAnything() throws {
        try withTemporaryDirectory { directory throws in
            try write(Data(#"[{"file": "a.png"}]"#.utf8), directory + "/m.json")
            let result = try run(["--store", directory + "/s", "import", "--manifest", directory + "/m.json", directory])
            #expect(result.status == 65)
            #expect(result.standardError == #"imgstore-admin import: \#(directory)/m.json is not an imgstore manifest: expected {"entries": [{"file": ..., "url": ...}, ...]}"# + "\n")
            #expect(result.output.isEmpty)
        }
    }

    // MARK: - export

    /// URLs an export must turn into safe, distinct file names.
    private static let hostileURLs = [
        "https://x.test/../../etc/passwd",
        "https://x.test/" + String(repeating: "a", count: 4_985),
        "https://x.test/img.png?v=1",
        "https://x.test/img.png?v=2",
        "https://x.test/",
        "https://x.test/dir/..",
        "https://x.test/%2e%2e%2f%2e%2e%2fetc",
        "https://x.test/-rf%20%2F.png",
    ]

    /// A store holding the fixtures (imported) and the hostile URLs (each a different fixture's bytes).
    private func makeStoreWithHostileURLs(_ store: String) throws -> [String: Data] {
        var expected: [String: Data] = [:]
        let imported = try run(["--store", store, "import", "--json", "--base-url", "https://cdn.test/f/", Fixtures.directory])
        #expect(imported.status == 0, "\(imported.standardError)")
        for line in try jsonLines(imported) {
            expected[line["url"] as! String] = try Fixtures.image(line["path"] as! String)
        }
        let images = try Fixtures.images()
        for (index, url) in Self.hostileURLs.enumerated() {
            let (name, data) = images[index % images.count]
            let put = try run(["--store", store, "put", url, Fixtures.directory + "/" + name])
            #expect(put.status == 0, "\(put.standardError)")
            expected[url] = data
        }
        #expect(expected.count == 7 + Self.hostileURLs.count)
        return expected
    }

    @Test func exportThenImportOfTheManifestRoundTripsEveryEntryByteForByte() throws {
        try withTemporaryDirectory { directory throws in
            let source = directory + "/source", copy = directory + "/copy", out = directory + "/out"
            let expected = try makeStoreWithHostileURLs(source)
            let export = try run(["--store", source, "export", out])
            #expect(export.status == 0, "\(export.standardError)")
            #expect(export.output == "exported \(expected.count) entries to \(out)/manifest.json\n")

            let restore = try run(["--store", copy, "import", "--json", "--manifest", out + "/manifest.json", out])
            #expect(restore.status == 0, "\(restore.standardError)")
            #expect(try jsonLines(restore).allSatisfy { $0["ok"] as? Bool == true })

            let before = try entries(source), after = try entries(copy)
            #expect(Set(after.keys) == Set(expected.keys))
            for (url, data) in expected {
                let got = try run(["--store", copy, "get", url])
                #expect(got.status == 0, "\(url.prefix(80))")
                #expect(got.standardOutput == data, "\(url.prefix(80)) differs after the round trip")
                #expect(after[url]?["checksum"] as? String == before[url]?["checksum"] as? String)
                #expect(after[url]?["format"] as? String == before[url]?["format"] as? String)
            }
        }
    }

    @Test func exportFileNamesAreSafeDistinctAndShortForHostileURLs() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s", out = directory + "/out"
            let expected = try makeStoreWithHostileURLs(store)
            #expect(try run(["--store", store, "export", out]).status == 0)

            // Nothing was written outside `out`, and `out` holds only plain files.
            #expect(Set(try FileManager.default.contentsOfDirectory(atPath: directory)) == ["s", "out"])
            let names = try FileManager.default.contentsOfDirectory(atPath: out)
            #expect(names.count == expected.count + 1)
            let manifestData = try Data(contentsOf: URL(fileURLWithPath: out + "/manifest.json"))
            let manifest = try #require(try JSONSerialization.jsonObject(with: manifestData) as? [String: Any])
            #expect(manifest["format"] as? String == "imgstore-export" && manifest["version"] as? Int == 1)
            let entries = try #require(manifest["entries"] as? [[String: Any]])
            let fileByURL = Dictionary(uniqueKeysWithValues: entries.map { ($0["url"] as! String, $0["file"] as! String) })
            #expect(Set(fileByURL.keys) == Set(expected.keys))
            #expect(Set(fileByURL.values.map { $0.lowercased() }).count == expected.count, "names are distinct, even ignoring case")

            let safe = try Regex("^[A-Za-z0-9_][A-Za-z0-9._-]*-[0-9a-f]{16}(-[0-9]+)?\\.(png|jpg|gif|webp|bin)$")
            for (url, name) in fileByURL {
                #expect(name.wholeMatch(of: safe) != nil, "unsafe name \(name) for \(url.prefix(80))")
                #expect(name.utf8.count <= 80 + 1 + 16 + 5, "\(name)")
                #expect(!name.contains("/") && !name.hasPrefix("."))
                var isDirectory: ObjCBool = true
                #expect(FileManager.default.fileExists(atPath: out + "/" + name, isDirectory: &isDirectory) && !isDirectory.boolValue)
                #expect(FileManager.default.contents(atPath: out + "/" + name) == expected[url], "\(name)")
            }
            #expect(fileByURL["https://x.test/../../etc/passwd"]?.hasPrefix("passwd-") == true)
            #expect(fileByURL["https://x.test/img.png?v=1"] != fileByURL["https://x.test/img.png?v=2"])
            #expect(fileByURL["https://x.test/img.png?v=1"]?.hasPrefix("img-") == true)
            #expect(fileByURL["https://x.test/"]?.hasPrefix("image-") == true)
            #expect(fileByURL["https://x.test/" + String(repeating: "a", count: 4_985)]?.hasPrefix(String(repeating: "a", count: 80) + "-") == true)
        }
    }

    @Test func exportRefusesANonEmptyDirectoryUnlessForced() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s", out = directory + "/out"
            #expect(try run(["--store", store, "import", Fixtures.directory]).status == 0)
            try write(Data("keep me\n".utf8), out + "/notes.txt")
            let refused = try run(["--store", store, "export", out])
            #expect(refused.status == 74)
            #expect(refused.standardError == "imgstore-admin export: \(out) is not empty; pass --force to write into it anyway\n")
            #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["notes.txt"], "nothing was written")

            let forced = try run(["--store", store, "export", "--force", out])
            #expect(forced.status == 0, "\(forced.standardError)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: out).count == 7 + 2)
            #expect(FileManager.default.contents(atPath: out + "/notes.txt") == Data("keep me\n".utf8))
            // A second forced export gives the same names, replacing the files.
            #expect(try run(["--store", store, "export", "--force", out]).status == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: out).count == 7 + 2)

            try write(Data([1]), directory + "/file")
            let notDirectory = try run(["--store", store, "export", directory + "/file"])
            #expect(notDirectory.status == 74)
            #expect(notDirectory.standardError == "imgstore-admin export: \(directory)/file exists and is not a directory\n")
        }
    }
}
