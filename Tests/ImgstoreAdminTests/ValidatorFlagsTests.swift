import Foundation
import ImageStoreTestSupport
import Testing

/// `validate` on all cores in argument order, and `--strict` (the trailing-data policy) on validate, put and import.
@Suite struct ValidatorFlagsTests {
    private let admin = AdminBinary.path

    /// A JPEG followed by an MP4 header, as Android motion photos are laid out.
    static func writeMotionPhoto(to path: String) throws -> Int {
        let jpeg = try Fixtures.image("photo-baseline.jpg")
        let ftyp: [UInt8] = [0, 0, 0, 24] + Array("ftypmp42".utf8) + [0, 0, 0, 0] + Array("isommp42".utf8)
        try (jpeg + Data(ftyp)).write(to: URL(fileURLWithPath: path))
        return ftyp.count
    }

    @Test func validatePrintsOneLinePerFileInTheOrderGiven() throws {
        try withTemporaryDirectory { directory throws in
            let cut = directory + "/cut.png"
            try Fixtures.image("gradient-rgb.png").prefix(500).write(to: URL(fileURLWithPath: cut))
            let names = ["gradient-rgb.png", "photo-progressive.jpg", "shapes.png", "photo-baseline.jpg", "gray-restart.jpg"]
            // 60 files, valid and invalid interleaved: parallel workers finish out of order, the lines must not.
            var files: [String] = [], expected = ""
            for i in 0..<60 {
                if i % 7 == 3 {
                    files.append(cut)
                    expected += "\(cut): invalid"
                } else {
                    let file = Fixtures.directory + "/" + names[i % names.count]
                    files.append(file)
                    expected += "\(file): ok"
                }
                expected += "\n"
            }
            for mode in [[], ["--deep"]] {
                let result = try ChildProcess.run(admin, ["validate"] + mode + files)
                #expect(result.status == 1)
                let shortened = result.output.split(separator: "\n", omittingEmptySubsequences: false).map { line in
                    line.hasPrefix(cut) ? "\(cut): invalid" : String(line.prefix { $0 != "," })
                }.joined(separator: "\n")
                #expect(shortened == expected, "\(mode)")
            }
        }
    }

    @Test func validateAcceptsAndCountsTrailingBytesUnlessStrict() throws {
        try withTemporaryDirectory { directory throws in
            let photo = directory + "/motion.jpg"
            let trailing = try Self.writeMotionPhoto(to: photo)
            let lenient = try ChildProcess.run(admin, ["validate", "--deep", photo])
            #expect(lenient.status == 0)
            #expect(lenient.output == "\(photo): ok, jpeg 160x120 (\(trailing) bytes after the end marker)\n")
            let strict = try ChildProcess.run(admin, ["validate", "--strict", photo])
            #expect(strict.status == 1)
            #expect(strict.output.contains("trailingData"))
        }
    }

    @Test func putAndImportRejectTrailingBytesWhenStrict() throws {
        try withTemporaryDirectory { directory throws in
            let images = directory + "/images"
            try FileManager.default.createDirectory(atPath: images, withIntermediateDirectories: true)
            _ = try Self.writeMotionPhoto(to: images + "/motion.jpg")
            let store = directory + "/store"
            let strictPut = try ChildProcess.run(admin, ["--store", store, "put", "--strict", "https://x.test/m.jpg", images + "/motion.jpg"])
            #expect(strictPut.status == 65, "\(strictPut.standardError)")
            let put = try ChildProcess.run(admin, ["--store", store, "put", "https://x.test/m.jpg", images + "/motion.jpg"])
            #expect(put.status == 0, "\(put.standardError)")
            let strictImport = try ChildProcess.run(admin, ["--store", directory + "/store2", "import", "--strict", images])
            #expect(strictImport.status == 65, "\(strictImport.standardError)")
            let lenientImport = try ChildProcess.run(admin, ["--store", directory + "/store3", "import", images])
            #expect(lenientImport.status == 0, "\(lenientImport.standardError)")
        }
    }
}
