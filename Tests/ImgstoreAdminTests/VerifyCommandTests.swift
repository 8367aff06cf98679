import Foundation
import ImageStoreTestSupport
import Testing

/// `imgstore-admin verify` as ops and CI use it: fsck's exit codes, a summary, JSON.
@Suite struct VerifyCommandTests {
    private let admin = AdminBinary.path

    @Test func exitCodesFollowFsck() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            #expect(try ChildProcess.run(admin, ["--store", store, "demo", "--fixtures", Fixtures.directory]).status == 0)
            let clean = try ChildProcess.run(admin, ["--store", store, "verify"])
            #expect(clean.status == 0)
            #expect(clean.output == "OK: 7 entries and 0 log segment(s) checked\n")

            // Damage one image's bytes inside data.mdb.
            let image = try Fixtures.image("photo-baseline.jpg")
            let offset = try #require(try FileCorruption.offsets(of: image.prefix(64), in: store + "/data.mdb").first)
            try FileCorruption.flipByte(at: offset + image.count / 2, in: store + "/data.mdb")

            let damaged = try ChildProcess.run(admin, ["--store", store, "verify"])
            #expect(damaged.status == 4)
            #expect(damaged.output == """
                checksum-mismatch: https://demo.imgstore.invalid/fixtures/photo-baseline.jpg: the stored bytes do not match the entry's size and checksum
                1 problem(s) found (1 checksum-mismatch), 0 repaired

                """)
            let json = try ChildProcess.run(admin, ["--store", store, "verify", "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: json.standardOutput) as? [String: Any])
            #expect(object["ok"] as? Bool == false)
            #expect((object["counts"] as? [String: Int])?["checksum-mismatch"] == 1)

            let repair = try ChildProcess.run(admin, ["--store", store, "verify", "--repair"])
            #expect(repair.status == 1, "\(repair.output)\(repair.standardError)")
            #expect(try ChildProcess.run(admin, ["--store", store, "verify"]).status == 0)
            let quarantine = try ChildProcess.run(admin, ["--store", store, "quarantine"])
            #expect(quarantine.output.contains("checksum-mismatch  7660 bytes  https://demo.imgstore.invalid/fixtures/photo-baseline.jpg"))
            #expect(try ChildProcess.run(admin, ["--store", store, "quarantine", "--purge"]).output == "purged 1 quarantined entry\n")
        }
    }

    @Test func operationalAndUsageErrors() throws {
        #expect(try ChildProcess.run(admin, ["--store", "/nonexistent/store", "verify"]).status == 8)
        #expect(try ChildProcess.run(admin, ["verify", "extra-argument"]).status == 16)
        let help = try ChildProcess.run(admin, ["verify", "--help"])
        #expect(help.output.contains("16  usage error"))
    }
}
