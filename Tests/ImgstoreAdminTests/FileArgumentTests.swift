import Foundation
import ImageStoreTestSupport
import Testing

/// `get -o PATH` writes through to what PATH is; `put URL FILE` reads any readable file,
/// `-` for standard input, at most the size limit plus one byte.
@Suite struct FileArgumentTests {
    private let url = "https://demo.imgstore.invalid/fixtures/photo-baseline.jpg"

    // MARK: - get -o

    /// A device node of our own (like /dev/null: char 1,3), so a failure cannot replace the
    /// machine's /dev/null.
    @Test(.enabled(if: Tools.isRoot, "needs root to make a device node"))
    func getIntoADeviceKeepsTheDevice() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let device = directory + "/null"
            #expect(mknod(device, S_IFCHR | 0o666, dev_t((1 << 8) | 3)) == 0)
            let result = try AdminBinary.run(["--store", store, "get", url, "-o", device])
            #expect(result.status == 0, "\(result.standardError)")
            var info = stat()
            #expect(lstat(device, &info) == 0)
            #expect(info.st_mode & S_IFMT == S_IFCHR, "still a character device")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["null", "s"], "no temporary file left")
        }
    }

    @Test func getThroughASymbolicLinkWritesItsTargetAndKeepsTheLink() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            try Data("old".utf8).write(to: URL(fileURLWithPath: directory + "/target.jpg"))
            try FileManager.default.createSymbolicLink(atPath: directory + "/link.jpg", withDestinationPath: "target.jpg")
            let result = try AdminBinary.run(["--store", store, "get", url, "-o", directory + "/link.jpg"])
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try FileManager.default.destinationOfSymbolicLink(atPath: directory + "/link.jpg") == "target.jpg")
            #expect(FileManager.default.contents(atPath: directory + "/target.jpg") == (try Fixtures.image("photo-baseline.jpg")))
        }
    }

    @Test func getIntoAnUnwritablePathNamesThePathAndTheReason() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let target = directory + "/missing-dir/out.jpg"
            let result = try AdminBinary.run(["--store", store, "get", url, "-o", target])
            #expect(result.status == 74)
            #expect(result.standardError == "imgstore-admin get: cannot write \(target): No such file or directory\n")
            let directoryTarget = try AdminBinary.run(["--store", store, "get", url, "-o", directory])
            #expect(directoryTarget.status == 74)
            #expect(directoryTarget.standardError == "imgstore-admin get: cannot write \(directory): Is a directory\n")
        }
    }

    // MARK: - put from standard input and other non-regular files

    @Test func putReadsStandardInputForADash() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let image = try Fixtures.image("shapes.png")
            let put = try AdminBinary.run(["--store", store, "put", "https://x.test/stdin.png", "-"], input: image)
            #expect(put.status == 0, "\(put.standardError)")
            #expect(put.output == "stored https://x.test/stdin.png (\(image.count) bytes, png 100x30)\n")
            let devStdin = try AdminBinary.run(["--store", store, "put", "https://x.test/dev-stdin.png", "/dev/stdin"], input: image)
            #expect(devStdin.status == 0, "\(devStdin.standardError)")
            #expect(try AdminBinary.run(["--store", store, "get", "https://x.test/dev-stdin.png"]).standardOutput == image)
        }
    }

    @Test func putReadsAFIFO() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let script = #"""
                mkfifo "$2/pipe"
                cat "$3" > "$2/pipe" &
                "$ADMIN" --store "$1" put https://x.test/fifo.png "$2/pipe"; echo "status=$?"
                wait
                """#
            let result = try AdminBinary.shell(script, [store, directory, Fixtures.directory + "/shapes.png"])
            #expect(result.output == "stored https://x.test/fifo.png (167 bytes, png 100x30)\nstatus=0\n", "\(result.standardError)")
        }
    }

    @Test func anEndlessInputStopsAtTheLimitPlusOneByte() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let result = try AdminBinary.run(["--store", store, "put", "https://x.test/zero.png", "/dev/zero"])
            #expect(result.status == 65)
            #expect(result.standardError == "imgstore-admin put: /dev/zero is larger than the limit of 67108864 bytes per entry\n")
            #expect(!FileManager.default.fileExists(atPath: store), "nothing to store, so no store was created")
        }
    }
}
