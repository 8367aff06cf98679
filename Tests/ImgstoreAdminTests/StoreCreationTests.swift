import Foundation
import ImageStoreTestSupport
import Testing

/// When the tool creates a store directory, and what it says when it cannot (probe 14,
/// findings 7, 8 and 16): a refused `put` creates nothing, `readers` on a missing store is 66
/// like every read command, and a directory that cannot be created is named with the
/// system's reason, never Foundation's error text.
@Suite struct StoreCreationTests {
    private static let url = "https://x.test/a.png"
    private static let shapes = Fixtures.directory + "/shapes.png"

    // MARK: - A store directory that cannot be created

    /// Failed before: "… cannot be used: it does not exist and cannot be created (The
    /// operation could not be completed. (NSCocoaErrorDomain error 512.)). Check its permissions."
    @Test func aStorePathUnderARegularFileNamesTheDirectoryAndTheSystemsReason() throws {
        try withTemporaryDirectory { directory throws in
            try Data("hi\n".utf8).write(to: URL(fileURLWithPath: directory + "/afile"))
            for store in [directory + "/afile/sub", directory + "/afile/sub/deeper"] {
                let result = try AdminBinary.run(["--store", store, "put", Self.url, Self.shapes])
                #expect(result.status == 74)
                #expect(result.output.isEmpty)
                #expect(result.standardError == "imgstore-admin put: The store directory \(store) cannot be used: it does not exist and cannot be created (Not a directory).\n")
            }
        }
    }

    /// A relative path is named as the user gave it; the reason is the system's for the
    /// directory that could not be made.
    @Test func aRelativeStorePathIsNamedAsGiven() throws {
        try withTemporaryDirectory { directory throws in
            try Data("hi\n".utf8).write(to: URL(fileURLWithPath: directory + "/afile"))
            let result = try AdminBinary.run(["--store", "afile/sub", "import", Fixtures.directory], workingIn: directory)
            #expect(result.status == 74)
            #expect(result.standardError == "imgstore-admin import: The store directory afile/sub cannot be used: it does not exist and cannot be created (Not a directory).\n")
            #expect(!result.standardError.contains("NSCocoaErrorDomain"))
        }
    }

    // MARK: - readers on a missing store

    /// Failed before: 74, "The directory nosuch is not an imgstore store: it holds no data.mdb.
    /// Use an empty or new directory."
    @Test(arguments: [["readers"], ["readers", "--clear"]])
    func readersOnAMissingStoreIsNoStoreAndCreatesNothing(command: [String]) throws {
        try withTemporaryDirectory { directory throws in
            for store in [directory + "/nosuch", directory + "/nosuch/deeper"] {
                let result = try AdminBinary.run(["--store", store] + command)
                #expect(result.status == 66, "\(result.standardError)")
                #expect(result.output.isEmpty)
                #expect(result.standardError == "imgstore-admin readers: no store at \(store)\n")
            }
            let empty = directory + "/empty"
            try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: false)
            let result = try AdminBinary.run(["--store", empty] + command)
            #expect(result.status == 66, "\(result.standardError)")
            #expect(result.standardError == "imgstore-admin readers: no store at \(empty)\n")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["empty"], "nothing was created")
            #expect(try FileManager.default.contentsOfDirectory(atPath: empty).isEmpty, "nothing was created")
        }
    }

    /// A regular file is not "a directory that is not a store": it is said as `ls` says it.
    @Test func readersOnARegularFileSaysItIsNotADirectory() throws {
        try withTemporaryDirectory { directory throws in
            let file = directory + "/afile"
            try Data("hi\n".utf8).write(to: URL(fileURLWithPath: file))
            let readers = try AdminBinary.run(["--store", file, "readers"])
            let list = try AdminBinary.run(["--store", file, "ls"])
            #expect(readers.status == list.status)
            #expect(readers.standardError == list.standardError.replacingOccurrences(of: "imgstore-admin ls:", with: "imgstore-admin readers:"))
            #expect(readers.standardError.contains("is not a directory"), "\(readers.standardError)")
        }
    }

    // MARK: - A refused put creates nothing

    /// Failed before for every case: each exited 65 but left a new store (66 MB with its spare
    /// log segment) at the mistyped path.
    @Test(arguments: [
        ("/dev/null", "imgstore-admin put: The image data is empty (0 bytes); an empty download is not an image and is not stored.\n"),
        ("TEXT", "imgstore-admin put: The data for https://x.test/a.png is not a valid image: "),
        ("/dev/zero", "imgstore-admin put: /dev/zero is larger than the limit of 67108864 bytes per entry\n"),
    ])
    func aPutRefusedAsBadInputCreatesNoStore(file: String, message: String) throws {
        try withTemporaryDirectory { directory throws in
            let text = directory + "/not-an-image.txt"
            try Data("just some text\n".utf8).write(to: URL(fileURLWithPath: text))
            let store = directory + "/newstore"
            let result = try AdminBinary.run(["--store", store, "put", Self.url, file == "TEXT" ? text : file])
            #expect(result.status == 65)
            #expect(result.standardError.hasPrefix(message), "\(result.standardError)")
            #expect(!FileManager.default.fileExists(atPath: store), "a refused put created a store")
        }
    }

    /// Failed before: the URL was checked only by the store, once it had been created.
    @Test(arguments: ["not a url", "no-scheme.png", "https://", ""])
    func aPutOfAMalformedURLCreatesNoStore(url: String) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/newstore"
            let result = try AdminBinary.run(["--store", store, "put", url, Self.shapes])
            #expect(result.status == 65, "\(result.standardError)")
            #expect(result.standardError.hasPrefix("imgstore-admin put: The URL"), "\(result.standardError)")
            #expect(!FileManager.default.fileExists(atPath: store), "a refused put created a store")
        }
    }

    /// `--strict` is checked before the store exists too.
    @Test func aStrictPutRefusingTrailingBytesCreatesNoStore() throws {
        try withTemporaryDirectory { directory throws in
            let padded = directory + "/padded.png"
            try (Fixtures.image("shapes.png") + Data("trailing".utf8)).write(to: URL(fileURLWithPath: padded))
            let store = directory + "/newstore"
            let strict = try AdminBinary.run(["--store", store, "put", "--strict", Self.url, padded])
            #expect(strict.status == 65)
            #expect(strict.standardError.hasPrefix("imgstore-admin put: The data for https://x.test/a.png is not a valid image: "), "\(strict.standardError)")
            #expect(!FileManager.default.fileExists(atPath: store))
            let lenient = try AdminBinary.run(["--store", store, "put", Self.url, padded])
            #expect(lenient.status == 0, "\(lenient.standardError)")
        }
    }
}
