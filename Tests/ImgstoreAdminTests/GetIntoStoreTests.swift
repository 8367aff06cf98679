import Foundation
import ImageStoreTestSupport
import Testing

/// `get URL -o FILE` where FILE is one of the store's own files (data.mdb, lock.mdb, a log
/// segment…), directly or through a symbolic or hard link, or any path inside the store
/// directory: refused with 64 before anything is opened or truncated, the store unchanged.
/// (It used to open data.mdb with O_TRUNC while serving the image from its memory map: the
/// whole store was lost.)
@Suite struct GetIntoStoreTests {
    private let url = "https://demo.imgstore.invalid/fixtures/photo-baseline.jpg"

    /// Every file of the store directory with its whole contents: a refused `get` must not
    /// touch any of them, not even lock.mdb (it refuses before it opens the store).
    private func contents(_ store: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: store) {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: store + "/" + name))
        }
        return files
    }

    /// Runs `get -o target` and checks the refusal: 64, one line naming -o and `target`, and the
    /// store's files, sizes and contents as before.
    private func expectRefused(_ target: String, store: String, directory: String? = nil,
                               sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        // `store` as the tool is given it, relative to `directory` when that is given.
        let onDisk = store.hasPrefix("/") ? store : (directory ?? ".") + "/" + store
        let before = try contents(onDisk)
        // Absolute: the test runs the tool in `directory`, and $IMGSTORE_ADMIN_BINARY may be relative.
        let admin = URL(fileURLWithPath: AdminBinary.path).path
        let result = try ChildProcess.run(admin, ["--store", store, "get", url, "-o", target], currentDirectory: directory)
        #expect(result.status == 64, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardError.hasPrefix("imgstore-admin get: -o \(target) "), "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardError.hasSuffix("Write it outside the store directory.\n"), sourceLocation: sourceLocation)
        #expect(result.standardError.filter { $0 == "\n" }.count == 1, "one line", sourceLocation: sourceLocation)
        #expect(result.output.isEmpty, sourceLocation: sourceLocation)
        let after = try contents(onDisk)
        #expect(after.keys.sorted() == before.keys.sorted(), "no file created or removed", sourceLocation: sourceLocation)
        for (name, data) in before {
            #expect(after[name]?.count == data.count, "\(name) keeps its size", sourceLocation: sourceLocation)
            #expect(after[name] == data, "\(name) keeps its contents", sourceLocation: sourceLocation)
        }
        return result.standardError
    }

    private func expectStoreIntact(_ store: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let verify = try AdminBinary.run(["--store", store, "verify"])
        #expect(verify.status == 0, "\(verify.output)\(verify.standardError)", sourceLocation: sourceLocation)
        let get = try AdminBinary.run(["--store", store, "get", url])
        #expect(get.standardOutput == (try Fixtures.image("photo-baseline.jpg")), sourceLocation: sourceLocation)
    }

    /// A demo store at `DIR/s`: `body` gets DIR and the store's path, and the store is checked
    /// intact afterwards.
    private func withDemoStore(_ body: (_ directory: String, _ store: String) throws -> Void) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            try body(directory, store)
            try expectStoreIntact(store)
        }
    }

    // MARK: - The store's own files

    @Test func everyFileOfTheStoreIsRefused() throws {
        try withDemoStore { _, store in
            let names = try FileManager.default.contentsOfDirectory(atPath: store).sorted()
            #expect(names.contains("data.mdb") && names.contains("lock.mdb"), "\(names)")
            for name in names {
                let message = try expectRefused(store + "/" + name, store: store)
                #expect(message == "imgstore-admin get: -o \(store)/\(name) is the store's own \(name) (the store at \(store)); writing the image there would destroy the store. Write it outside the store directory.\n")
            }
        }
    }

    /// The probe's spelling: relative paths, `--store n get URL -o n/data.mdb`.
    @Test func aRelativePathToDataMdbIsRefused() throws {
        try withTemporaryDirectory { directory throws in
            try AdminBinary.makeDemoStore(directory + "/n")
            _ = try expectRefused("n/data.mdb", store: "n", directory: directory)
            _ = try expectRefused("./n/../n/lock.mdb", store: "n", directory: directory)
            try expectStoreIntact(directory + "/n")
        }
    }

    /// A new file in the store directory (a log segment's name, or any other) is refused too:
    /// the store's files are its business.
    @Test(arguments: ["wal-00000000000000000099.log", "image.jpg"])
    func aNewFileInsideTheStoreDirectoryIsRefusedAndNotCreated(name: String) throws {
        try withDemoStore { _, store in
            let message = try expectRefused(store + "/" + name, store: store)
            #expect(message == "imgstore-admin get: -o \(store)/\(name) is inside the store directory \(store); writing the image there could destroy the store. Write it outside the store directory.\n")
        }
    }

    // MARK: - Through links

    @Test func aSymbolicLinkToDataMdbIsRefused() throws {
        try withDemoStore { directory, store in
            try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: "s/data.mdb")
            _ = try expectRefused(directory + "/link", store: store)
        }
    }

    @Test func aHardLinkToDataMdbIsRefused() throws {
        try withDemoStore { directory, store in
            #expect(link(store + "/data.mdb", directory + "/hard") == 0, "\(String(cString: strerror(errno)))")
            let message = try expectRefused(directory + "/hard", store: store)
            #expect(message.contains("is the store's own data.mdb"), "\(message)")
        }
    }

    @Test func aPathThroughASymbolicLinkToTheStoreDirectoryIsRefused() throws {
        try withDemoStore { directory, store in
            try FileManager.default.createSymbolicLink(atPath: directory + "/alias", withDestinationPath: "s")
            _ = try expectRefused(directory + "/alias/data.mdb", store: store)
            _ = try expectRefused(directory + "/alias/new.jpg", store: store)
        }
    }

    @Test func aDanglingSymbolicLinkIntoTheStoreDirectoryIsRefused() throws {
        try withDemoStore { directory, store in
            try FileManager.default.createSymbolicLink(atPath: directory + "/dangling", withDestinationPath: store + "/new.jpg")
            let message = try expectRefused(directory + "/dangling", store: store)
            #expect(message.contains("is inside the store directory"), "\(message)")
        }
    }

    // MARK: - Standard output

    /// `get URL >> STORE/data.mdb`: the shell opened the store's file as standard output
    /// without truncating it; get refuses to append the image to it.
    @Test(arguments: ["data.mdb", "lock.mdb"])
    func standardOutputOnAStoreFileIsRefused(name: String) throws {
        try withDemoStore { _, store in
            let before = try contents(store)
            let result = try AdminBinary.shell(#""$ADMIN" --store "$1" get "$2" >> "$1/$3"; echo "status=$?""#, [store, url, name])
            #expect(result.output == "status=64\n")
            #expect(result.standardError == "imgstore-admin get: standard output is the store's own \(name) (the store at \(store)); writing the image there would destroy the store. Write it outside the store directory.\n")
            #expect(try contents(store) == before, "every file of the store as before")
        }
    }

    // MARK: - What stays allowed

    /// Beside the store (a sibling whose name starts like it, the parent directory) is fine.
    @Test func aFileBesideTheStoreIsWritten() throws {
        try withDemoStore { directory, store in
            try FileManager.default.createDirectory(atPath: directory + "/s2", withIntermediateDirectories: false)
            for target in [directory + "/out.jpg", directory + "/s2/out.jpg", directory + "/s.jpg"] {
                let result = try AdminBinary.run(["--store", store, "get", url, "-o", target])
                #expect(result.status == 0, "\(target): \(result.standardError)")
                #expect(FileManager.default.contents(atPath: target) == (try Fixtures.image("photo-baseline.jpg")))
            }
        }
    }
}
