import Foundation
import ImageStoreTestSupport
import Testing

/// Runs the built `imgstore-admin` and checks stdout, stderr and the exit status exactly.
@Suite struct AdminCommandTests {
    private let admin = AdminBinary.path

    private func run(_ arguments: [String], environment: [String: String]? = nil, in directory: String? = nil) throws -> ProcessResult {
        try ChildProcess.run(admin, arguments, environment: environment, currentDirectory: directory)
    }

    // MARK: - Usage

    @Test(arguments: [
        ([], 64, "imgstore-admin: no command given (see imgstore-admin --help)\n"),
        (["frobnicate"], 64, "imgstore-admin: unknown command 'frobnicate' (see imgstore-admin --help)\n"),
        (["put", "https://x.test/a"], 64, "imgstore-admin put: 'put' expects URL FILE, got 1 argument(s) (see imgstore-admin --help)\n"),
        (["ls", "--bogus"], 64, "imgstore-admin ls: unknown option --bogus for 'ls' (see imgstore-admin --help)\n"),
        (["get", "https://x.test/a", "-o"], 64, "imgstore-admin get: --output needs a value (FILE) (see imgstore-admin --help)\n"),
        (["ls", "--json=yes"], 64, "imgstore-admin ls: --json takes no value (see imgstore-admin --help)\n"),
    ] as [([String], Int32, String)])
    func usageErrors(arguments: [String], status: Int32, stderr: String) throws {
        let result = try run(arguments)
        #expect(result.status == status)
        #expect(result.standardError == stderr)
        #expect(result.output.isEmpty)
    }

    @Test func helpDocumentsEveryCommandAndTheExitCodes() throws {
        let result = try run(["--help"])
        #expect(result.status == 0)
        for command in ["demo", "put", "get", "rm", "ls", "stats"] { #expect(result.output.contains("\n  \(command) ")) }
        for code in ["0   success", "1   not found", "64  usage error", "65  bad input data", "74  I/O or storage error"] {
            #expect(result.output.contains(code))
        }
        for command in ["put", "get", "rm", "ls", "stats", "demo"] {
            let help = try run([command, "--help"])
            #expect(help.status == 0)
            #expect(help.output.hasPrefix("usage: imgstore-admin \(command)"))
        }
    }

    @Test func versionIsPrinted() throws {
        let result = try run(["--version"])
        #expect(result.status == 0)
        #expect(result.output == "imgstore-admin 0.1.0\n")
    }

    // MARK: - put, get, rm, ls, stats

    @Test func putGetRemoveRoundTrip() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/store"
            let file = Fixtures.directory + "/gradient-rgb.png"
            let put = try run(["--store", store, "put", "https://X.test/a.png", file])
            #expect(put.status == 0, "\(put.standardError)")
            let size = try Data(contentsOf: URL(fileURLWithPath: file)).count
            #expect(put.output == "stored https://x.test/a.png (\(size) bytes, png 64x48)\n")

            let get = try run(["get", "https://x.test/a.png"], environment: ["IMGSTORE_PATH": store])
            #expect(get.status == 0)
            #expect(get.standardOutput == (try Data(contentsOf: URL(fileURLWithPath: file))))

            let out = directory + "/out.png"
            #expect(try run(["--store", store, "get", "https://x.test/a.png", "-o", out]).status == 0)
            #expect(FileManager.default.contents(atPath: out) == FileManager.default.contents(atPath: file))

            let list = try run(["ls", "--store", store])
            #expect(list.output == "\(String(size).leftPadded(10))  png 64x48           https://x.test/a.png\n")
            let json = try run(["ls", "--json", "--store", store])
            let objects = try JSONSerialization.jsonObject(with: json.standardOutput) as? [[String: Any]]
            #expect(objects?.count == 1)
            #expect(objects?.first?["url"] as? String == "https://x.test/a.png")
            #expect(objects?.first?["width"] as? Int == 64)

            let stats = try run(["stats", "--json", "--store", store])
            let statsObject = try JSONSerialization.jsonObject(with: stats.standardOutput) as? [String: Any]
            #expect(statsObject?["entryCount"] as? Int == 1)
            #expect(statsObject?["logicalBytes"] as? Int == size)

            let remove = try run(["--store", store, "rm", "https://x.test/a.png"])
            #expect(remove.status == 0)
            #expect(remove.output == "removed https://x.test/a.png\n")
            let missing = try run(["--store", store, "get", "https://x.test/a.png"])
            #expect(missing.status == 1)
            #expect(missing.standardError == "imgstore-admin get: no entry for https://x.test/a.png\n")
            #expect(try run(["--store", store, "rm", "https://x.test/a.png"]).status == 1)
        }
    }

    @Test func theDefaultStoreIsImgstoreInTheCurrentDirectory() throws {
        try withTemporaryDirectory { directory throws in
            let result = try run(["put", "https://x.test/p.jpg", Fixtures.directory + "/photo-baseline.jpg"], environment: [:], in: directory)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(FileManager.default.fileExists(atPath: directory + "/imgstore/data.mdb"))
        }
    }

    // MARK: - Bad input and storage errors

    @Test func badDataExits65() throws {
        try withTemporaryDirectory { directory throws in
            let junk = directory + "/junk.png"
            try Data("not an image".utf8).write(to: URL(fileURLWithPath: junk))
            let notImage = try run(["--store", directory + "/s", "put", "https://x.test/a.png", junk])
            #expect(notImage.status == 65)
            #expect(notImage.standardError.hasPrefix("imgstore-admin put: The data for https://x.test/a.png is not a valid image"))
            let badURL = try run(["--store", directory + "/s", "put", "no-scheme.png", junk])
            #expect(badURL.status == 65)
            #expect(badURL.standardError.contains("is malformed"))
            #expect(try run(["--store", directory + "/s", "ls"]).output.isEmpty, "nothing was stored")
        }
    }

    @Test func storageErrorsExit74() throws {
        try withTemporaryDirectory { directory throws in
            let file = directory + "/file"
            try Data([1]).write(to: URL(fileURLWithPath: file))
            let notDirectory = try run(["--store", file, "ls"])
            #expect(notDirectory.status == 74)
            #expect(notDirectory.standardError == "imgstore-admin ls: The store path \(file) exists and is not a directory; choose a directory path.\n")
            let missingFile = try run(["--store", directory + "/s", "put", "https://x.test/a.png", directory + "/nope.png"])
            #expect(missingFile.status == 74)
            #expect(missingFile.standardError == "imgstore-admin put: cannot read \(directory)/nope.png: no such file\n")
        }
    }

    /// A real full disk: a 2 MiB tmpfs in a private mount namespace (needs root, as CI has).
    @Test(.enabled(if: Tools.isRoot, "needs root to mount a private tmpfs"))
    func aFullDiskIsAnErrorNotACrashAndLosesNothing() throws {
        try withTemporaryDirectory { directory throws in
            // A valid JPEG of a few MiB: random noise at quality 100, encoded by cjpeg.
            var random = SeededGenerator(seed: 1)
            let ppm = Data("P6\n1600 1200\n255\n".utf8) + random.bytes(1600 * 1200 * 3)
            try ppm.write(to: URL(fileURLWithPath: directory + "/noise.ppm"))
            let encode = try ChildProcess.run("/bin/sh", ["-c", "cjpeg -quality 100 \"$1\" > \"$2\"", "sh",
                                                          directory + "/noise.ppm", directory + "/big.jpg"])
            #expect(encode.status == 0, "cjpeg: \(encode.standardError)")
            let mount = directory + "/mnt"
            try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
            let script = """
                mount -t tmpfs -o size=2m tmpfs "$1" || exit 99
                "$2" --store "$1/s" put https://x.test/small.jpg "$3" >/dev/null || exit 98
                "$2" --store "$1/s" put https://x.test/big.jpg "$4"
                echo "put status=$?"
                "$2" --store "$1/s" get https://x.test/small.jpg | cmp -s - "$3" && echo "small intact"
                "$2" --store "$1/s" get https://x.test/big.jpg >/dev/null 2>&1; echo "get status=$?"
                """
            let result = try ChildProcess.run(
                "/usr/bin/env",
                ["unshare", "-m", "/bin/sh", "-c", script, "sh", mount, admin, Fixtures.directory + "/photo-baseline.jpg", directory + "/big.jpg"])
            #expect(result.status == 0, "\(result.output) \(result.standardError)")
            #expect(result.output == "put status=74\nsmall intact\nget status=1\n")
            #expect(result.standardError.hasPrefix("imgstore-admin put: The disk holding the store at \(mount)/s is full"),
                    "\(result.standardError)")
        }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
