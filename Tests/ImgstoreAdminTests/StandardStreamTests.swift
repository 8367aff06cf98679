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
    @Test(arguments: [
        ["get", "https://demo.imgstore.invalid/fixtures/missing.png"],
        ["get", "https://demo.imgstore.invalid/fixtures/shapes.png"],
        ["ls"], ["ls", "--json"], ["stats"], ["verify"], ["wal"],
        ["rm", "https://demo.imgstore.invalid/fixtures/missing.png"],
    ])
    func closedStandardDescriptorsNeverReachTheStoreFiles(arguments: [String]) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let data = try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb"))
            let lockBefore = try AdminBinary.fileFacts(store)["lock.mdb"]
            let result = try AdminBinary.shell(#""$ADMIN" --store "$@" <&- >&- 2>&-; echo "status=$?""#, [store] + arguments)
            #expect(result.output.hasPrefix("status="), "\(result.standardError)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: store + "/data.mdb")) == data, "data.mdb unchanged")
            #expect(try AdminBinary.fileFacts(store)["lock.mdb"]?[0] == lockBefore?[0], "lock.mdb keeps its size")
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
