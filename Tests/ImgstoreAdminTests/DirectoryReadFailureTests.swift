import Foundation
import ImageStoreTestSupport
import Testing

/// A directory a command must list and cannot is an I/O error (74) that names the directory
/// and the system's reason: never an empty listing taken for the truth ("no images found",
/// a disk total with files left out), and never Foundation's error texts.
@Suite struct DirectoryReadFailureTests {
    @Test func demoFromAMissingFixturesDirectorySaysWhyItCannotReadIt() throws {
        try withTemporaryDirectory { directory throws in
            let missing = directory + "/no-such-fixtures"
            let result = try AdminBinary.run(["--store", directory + "/store", "demo", "--fixtures", missing])
            #expect(result.status == 74, "\(result.standardError)")
            #expect(result.standardError.contains("cannot read \(missing): No such file or directory"), "\(result.standardError)")
            #expect(!result.standardError.contains("NSCocoaErrorDomain"))
            #expect(!FileManager.default.fileExists(atPath: directory + "/store/data.mdb"), "nothing was created for it")
        }
    }
}
