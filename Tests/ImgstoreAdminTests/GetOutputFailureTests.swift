import Foundation
import ImageStoreTestSupport
import Testing

/// `get` whose bytes cannot all be written: through `-o` into a pipe whose reader has gone (a
/// quiet exit, as on standard output), and into a regular file that cannot take them all (the
/// half-written file is not left behind).
@Suite struct GetOutputFailureTests {
    private let url = "https://demo.imgstore.invalid/fixtures/photo-baseline.jpg"

    // MARK: - A pipe whose reader has gone

    /// `get URL -o /dev/stdout | head -c 10` under systemd (SIGPIPE ignored): EPIPE through -o
    /// is the same quiet exit as through standard output, not 74 "Broken pipe".
    @Test func getIntoDevStdoutWhosePipeReaderHasGoneEndsQuietly() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let result = try GonePipeReader.run(#""$ADMIN" --store "$1" get "$2" -o /dev/stdout"#, [store, url], ignoringSIGPIPE: true)
            #expect(result.standardError == "status=0\n")
        }
    }

    /// With SIGPIPE at its default the tool is ended by the signal (status 141 in the shell),
    /// as Unix tools are, through -o or standard output: never a success.
    @Test(arguments: [["-o", "/dev/stdout"], []])
    func withSIGPIPEAtItsDefaultTheToolIsEndedByTheSignal(output: [String]) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let result = try GonePipeReader.run(#""$ADMIN" --store "$1" get "$2" $3 $4"#, [store, url] + output, ignoringSIGPIPE: false)
            #expect(result.standardError == "status=141\n")
        }
    }

    // MARK: - A regular file that cannot take every byte

    /// `get -o target` under a file size limit (`ulimit -f 4`, SIGXFSZ ignored) that stops the
    /// write after 2 or 4 KiB of the 7660-byte image with EFBIG: exit 74 naming the file.
    private func expectFileTooLarge(_ store: String, _ target: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try AdminBinary.shell(#"trap '' XFSZ; ulimit -f 4; "$ADMIN" --store "$1" get "$2" -o "$3"; echo "status=$?""#, [store, url, target])
        #expect(result.output == "status=74\n", sourceLocation: sourceLocation)
        #expect(result.standardError == "imgstore-admin get: cannot write \(target): File too large\n", sourceLocation: sourceLocation)
    }

    /// The file that `get` created is removed rather than left half-written.
    @Test func aRegularFileCreatedByGetIsRemovedWhenItsWriteFails() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let target = directory + "/out.jpg"
            try expectFileTooLarge(store, target)
            #expect(!FileManager.default.fileExists(atPath: target), "no half-written \(target)")
        }
    }

    /// A file that was there is truncated (as `>` does) and, when the write fails, left empty:
    /// never a part of the image.
    @Test func anExistingRegularFileIsLeftEmptyWhenItsWriteFails() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let target = directory + "/out.jpg"
            try Data("old".utf8).write(to: URL(fileURLWithPath: target))
            try expectFileTooLarge(store, target)
            #expect(FileManager.default.contents(atPath: target) == Data(), "empty, not a part of the image")
        }
    }
}
