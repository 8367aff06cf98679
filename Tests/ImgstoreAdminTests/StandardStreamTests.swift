import Foundation
import ImageStoreTestSupport
import Testing

/// The tool as cron, systemd and scripts run it: standard descriptors closed, stdout on a full
/// disk or a pipe whose reader has gone.
@Suite struct StandardStreamTests {
    // MARK: - Closed descriptors 0, 1, 2

    /// With 0–2 closed, the store's files used to get descriptors 1 and 2, and the tool's own
    /// messages went into data.mdb and lock.mdb. Each command runs with all three closed; the
    /// store must be byte for byte as before (but for lock.mdb's reader table) and still verify.
    /// The status is each command's own with standard output closed: 74 when it has something to
    /// print, 1 for an entry not found, 8 for verify (its report lost: 8 added to "clean").
    static let closedDescriptorCases: [([String], Int32)] = [
        (["get", "https://demo.imgstore.invalid/fixtures/missing.png"], 1),
        (["get", "https://demo.imgstore.invalid/fixtures/shapes.png"], 74),
        (["ls"], 74), (["ls", "--json"], 74), (["stats"], 74), (["verify"], 8), (["wal"], 74),
        (["rm", "https://demo.imgstore.invalid/fixtures/missing.png"], 1),
    ]

    @Test(arguments: closedDescriptorCases)
    func closedStandardDescriptorsNeverReachTheStoreFiles(arguments: [String], status: Int32) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let data = try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb"))
            let before = try AdminBinary.fileFacts(store)
            let result = try AdminBinary.shell(#""$ADMIN" --store "$@" <&- >&- 2>&-; echo "status=$?""#, [store] + arguments)
            #expect(result.output == "status=\(status)\n", "\(result.standardError)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb")) == data, "data.mdb unchanged")
            // A read command leaves every file's size and modification time (lock.mdb: its size;
            // readers write it). rm opens as the writer: the log and writer.lock are its own.
            if arguments[0] != "rm" { #expect(try AdminBinary.fileFacts(store) == before, "no store file was written") }
            let verify = try AdminBinary.run(["--store", store, "verify"])
            #expect(verify.status == 0, "\(verify.output)\(verify.standardError)")
            #expect(verify.output == "OK: 7 entries and 0 log segment(s) checked\n")
        }
    }

    /// A writer (put) with 0–2 closed: the log segments and writer.lock must not land on 0–2
    /// either. The entry is stored, and the store verifies.
    @Test func aWriterWithClosedDescriptorsStoresAndLeavesAValidStore() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let file = Fixtures.directory + "/shapes.png"
            let result = try AdminBinary.shell(#""$ADMIN" --store "$1" put https://x.test/new.png "$2" <&- >&- 2>&-; echo "status=$?""#, [store, file])
            #expect(result.output == "status=74\n", "stdout was closed: the put is made, reporting it fails")
            let get = try AdminBinary.run(["--store", store, "get", "https://x.test/new.png"])
            #expect(get.standardOutput == (try Fixtures.image("shapes.png")))
            #expect(try AdminBinary.run(["--store", store, "verify"]).status == 0)
        }
    }

    /// The tool points closed descriptors 0–2 at `/dev/null` itself, at start-up, not only
    /// when a store opens (`ImageStore.init` does too): `validate` opens no store, and with
    /// standard input closed `/dev/stdin` must read as empty, exactly as `< /dev/null`, not fail
    /// to open (as it does without the tool's step).
    @Test func theToolFillsClosedDescriptorsBeforeAnyStoreOpens() throws {
        let closed = try AdminBinary.shell(#""$ADMIN" validate /dev/stdin <&-; echo "status=$?""#)
        let empty = try AdminBinary.shell(#""$ADMIN" validate /dev/stdin < /dev/null; echo "status=$?""#)
        #expect(empty.output.hasPrefix("/dev/stdin: invalid: "), "\(empty.output)")
        #expect(closed.output == empty.output, "stdin closed reads as /dev/null: \(closed.output)\(closed.standardError)")
        #expect(closed.standardError == empty.standardError)
    }

    /// `get URL -o /dev/stdout` with standard output closed: the tool's placeholder `/dev/null`
    /// must not swallow the image with status 0. It is reported as `get URL >&-` is (74), in every
    /// spelling of the descriptor, before the store is opened; `-o /dev/null` itself still works.
    @Test(arguments: ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
    func anOutputFileThatIsAClosedStandardOutputIs74(target: String) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let url = "https://demo.imgstore.invalid/fixtures/shapes.png"
            let result = try AdminBinary.shell(#""$ADMIN" --store "$1" get "$2" -o "$3" >&-; echo "status=$?" >&2"#, [store, url, target])
            #expect(result.standardError == "imgstore-admin get: cannot write \(target): it is standard output, which is closed\nstatus=74\n")
            let null = try AdminBinary.shell(#""$ADMIN" --store "$1" get "$2" -o /dev/null >&-; echo "status=$?" >&2"#, [store, url])
            #expect(null.standardError == "status=0\n", "-o /dev/null is what it says")
            let open = try AdminBinary.shell(#""$ADMIN" --store "$1" get "$2" -o "$3" | wc -c"#, [store, url, target])
            #expect(open.output.trimmingCharacters(in: .whitespacesAndNewlines) == String(try Fixtures.image("shapes.png").count),
                    "an open standard output gets the image: \(open.standardError)")
        }
    }

    // MARK: - Standard output that cannot be written

    // verify keeps fsck's statuses when its report is lost (8 added): VerifyLostReportTests.
    @Test(arguments: [
        ["ls"], ["ls", "--json"], ["get", "https://demo.imgstore.invalid/fixtures/shapes.png"], ["stats"], ["--help"],
    ])
    func aFullStandardOutputIsOneLineOnStderrAndStatus74(arguments: [String]) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let result = try AdminBinary.shell(#""$ADMIN" --store "$@" > /dev/full; echo "status=$?""#, [store] + arguments)
            #expect(result.output == "status=74\n")
            let command = arguments[0].hasPrefix("-") ? "" : " " + arguments[0]
            #expect(result.standardError == "imgstore-admin\(command): cannot write to standard output: No space left on device\n")
        }
    }

    @Test func aClosedStandardOutputIsOneLineOnStderrAndStatus74() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let result = try AdminBinary.shell(#""$ADMIN" --store "$1" ls >&-; echo "status=$?""#, [store])
            #expect(result.output == "status=74\n")
            #expect(result.standardError == "imgstore-admin ls: cannot write to standard output: it is closed\n")
        }
    }

    /// `imgstore-admin ls | head -1` under systemd, which ignores SIGPIPE: the reader is gone
    /// before the tool writes (the right-hand side closes its end, then lets the left start).
    @Test func aPipeWhoseReaderHasGoneEndsQuietly() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let script = #"""
                trap '' PIPE
                mkfifo "$2/go"
                { read line < "$2/go"; "$ADMIN" --store "$1" ls; echo "status=$?" >&2; } | { exec 0<&-; echo go > "$2/go"; }
                """#
            let result = try AdminBinary.shell(script, [store, directory])
            #expect(result.standardError == "status=0\n")
        }
    }
}
