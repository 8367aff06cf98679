import Foundation
import ImageStoreTestSupport
import Testing

/// `verify` whose standard output cannot be written (`> /dev/full`, `>&-`): the report is lost,
/// so one stderr line says so, why, and what the report said; the status keeps fsck's bits
/// (4 problems left, 1 all repaired) and adds 8 (operational error). Never 74: verify exits as
/// fsck does.
@Suite struct VerifyLostReportTests {
    /// How standard output is made unwritable, and the reason the tool gives for it.
    static let unwritable: [(redirect: String, reason: String)] = [
        ("> /dev/full", "No space left on device"),
        (">&-", "it is closed"),
    ]

    private static let damagedSummary = "1 problem(s) found (1 checksum-mismatch), 0 repaired"
    private static let repairedSummary = "1 problem(s) found (1 checksum-mismatch), 1 repaired"

    /// Runs `verify` with `arguments` on `store`, standard output made unwritable by `redirect`.
    private func verify(_ store: String, _ arguments: [String], _ redirect: String) throws -> ProcessResult {
        try AdminBinary.shell(#""$ADMIN" --store "$@" "# + redirect + #"; echo "status=$?""#, [store, "verify"] + arguments)
    }

    private func expectedLine(_ reason: String, _ summary: String) -> String {
        "imgstore-admin verify: cannot write the report to standard output: \(reason); its summary: \(summary)\n"
    }

    // MARK: - Damaged, repaired, clean

    /// One row: how the store is made, verify's options, the status and the summary on stderr.
    struct Case: Sendable, CustomTestStringConvertible {
        var damaged: Bool
        var arguments: [String]
        var status: Int
        var summary: String
        var testDescription: String { "\(damaged ? "damaged" : "clean") verify \(arguments.joined(separator: " ")) → \(status)" }
    }

    static let cases: [Case] = [
        Case(damaged: true, arguments: [], status: 12, summary: damagedSummary),          // 4 problems left + 8
        Case(damaged: true, arguments: ["--json"], status: 12, summary: damagedSummary),
        Case(damaged: true, arguments: ["--repair"], status: 9, summary: repairedSummary), // 1 all repaired + 8
        Case(damaged: false, arguments: [], status: 8, summary: "OK: 7 entries and 0 log segment(s) checked"),
        Case(damaged: false, arguments: ["--json"], status: 8, summary: "OK: 7 entries and 0 log segment(s) checked"),
    ]

    @Test(arguments: cases, [0, 1])
    func aLostReportIsOneLineOnStderrAndAdds8ToFscksStatus(row: Case, way: Int) throws {
        let (redirect, reason) = Self.unwritable[way]
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try row.damaged ? AdminBinary.makeDamagedDemoStore(store) : AdminBinary.makeDemoStore(store)
            let result = try verify(store, row.arguments, redirect)
            #expect(result.output == "status=\(row.status)\n", "never 74: verify keeps fsck's statuses")
            #expect(result.standardError == expectedLine(reason, row.summary))
            if row.arguments == ["--repair"] {
                let again = try AdminBinary.run(["--store", store, "verify"])
                #expect(again.status == 0, "the repair was made: \(again.output)")
            }
        }
    }

    // MARK: - A reader that went away is still quiet

    /// `verify | head -1` with SIGPIPE ignored: EPIPE is a quiet exit, with fsck's own status.
    @Test func aDamagedStoreWhosePipeReaderHasGoneEndsQuietlyWith4() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDamagedDemoStore(store)
            let result = try GonePipeReader.run(#""$ADMIN" --store "$1" verify"#, [store], ignoringSIGPIPE: true)
            #expect(result.standardError == "status=4\n")
        }
    }

    // MARK: - Documented

    @Test func verifysHelpSaysALostReportAdds8() throws {
        let help = try AdminBinary.run(["verify", "--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("when the report cannot be written to standard output: 8, 9 or 12"), "\(help.output)")
        #expect(!help.output.contains("74"))
    }
}
