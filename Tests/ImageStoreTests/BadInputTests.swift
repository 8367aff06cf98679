import Foundation
import ImageStore
import ImageStoreTestSupport
import LMDB
import Testing

/// Every bad input gets its typed error and leaves the store as it was.
@Suite struct BadInputTests {
    // MARK: - Puts

    private func expectRejected(
        _ expected: (ImageStoreError) -> Bool, configuration: ImageStore.Configuration = makeConfiguration(),
        sourceLocation: SourceLocation = #_sourceLocation,
        _ put: (ImageStore) throws(ImageStoreError) -> Void
    ) throws {
        try withTemporaryStore(configuration) { store in
            try store.put(try Fixtures.image("photo-baseline.jpg"), for: "https://x.test/existing")
            let before = (try store.entries(), try store.statistics().logicalBytes)
            do {
                try put(store)
                Issue.record("the put was accepted", sourceLocation: sourceLocation)
            } catch let error as ImageStoreError {
                #expect(expected(error), "unexpected error: \(error)", sourceLocation: sourceLocation)
                #expect(!error.description.isEmpty && error.description.hasSuffix("."), sourceLocation: sourceLocation)
            }
            #expect(try store.entries() == before.0, "entries unchanged", sourceLocation: sourceLocation)
            #expect(try store.statistics().logicalBytes == before.1, sourceLocation: sourceLocation)
        }
    }

    @Test func emptyURL() throws {
        try expectRejected({ $0 == .emptyURL }) { store throws(ImageStoreError) in try store.put(Data([1]), for: "") }
    }

    @Test func malformedURL() throws {
        try expectRejected({ if case .malformedURL = $0 { true } else { false } }) { store throws(ImageStoreError) in
            try store.put(Data([1]), for: "not a url")
        }
    }

    @Test func urlOverTheLimit() throws {
        var configuration = makeConfiguration()
        configuration.maxURLBytes = 1000
        try expectRejected({ $0 == .urlTooLong(length: 1001, limit: 1000) }, configuration: configuration) { store throws(ImageStoreError) in
            try store.put(Data([1]), for: "https://x.test/" + String(repeating: "a", count: 1001 - 15))
        }
    }

    @Test func zeroByteData() throws {
        try expectRejected({ $0 == .emptyData }) { store throws(ImageStoreError) in try store.put(Data(), for: "https://x.test/e") }
    }

    @Test func dataOverMaxEntryBytes() throws {
        var configuration = makeConfiguration()
        configuration.maxEntryBytes = 10000
        try expectRejected({ $0 == .entryTooLarge(byteCount: 10001, limit: 10000) }, configuration: configuration) { store throws(ImageStoreError) in
            try store.put(Data(count: 10001), for: "https://x.test/big")
        }
    }

    @Test func bytesThatAreNotAnImage() throws {
        try expectRejected({ if case .invalidImage = $0 { true } else { false } },
                           configuration: makeConfiguration(validation: .rejectInvalid)) { store throws(ImageStoreError) in
            try store.put(Data("<html>404 not found</html>".utf8), for: "https://x.test/a.png")
        }
    }

    @Test func aTruncatedImage() throws {
        let png = try Fixtures.image("gradient-rgb.png")
        try expectRejected({ if case .invalidImage = $0 { true } else { false } },
                           configuration: makeConfiguration(validation: .rejectInvalid)) { store throws(ImageStoreError) in
            try store.put(png.prefix(png.count / 2), for: "https://x.test/a.png")
        }
    }

    @Test func unknownFormatsAreStoredWhenThePolicySaysSo() throws {
        try withTemporaryStore(makeConfiguration(validation: .acceptUnknownFormats)) { store in
            let info = try store.put(Data("plain text".utf8), for: "https://x.test/a.txt")
            #expect(info.image == nil)
            let png = try Fixtures.image("gradient-rgb.png")
            #expect(throws: ImageStoreError.self, "damaged images are still refused") {
                try store.put(png.prefix(100), for: "https://x.test/b.png")
            }
        }
    }

    // MARK: - Opening

    @Test func aStorePathThatIsAFile() throws {
        try withTemporaryDirectory { directory in
            let file = directory + "/file"
            _ = FileManager.default.createFile(atPath: file, contents: Data([1]))
            #expect(throws: ImageStoreError.notADirectory(path: file)) { try ImageStore(path: file) }
        }
    }

    @Test func aStorePathThatCannotBeCreated() throws {
        // /proc refuses new directories even for root, so this holds under any user.
        #expect { try ImageStore(path: "/proc/imgstore-test/store") } throws: { error in
            if case .notWritable = error as? ImageStoreError { true } else { false }
        }
    }

    @Test func aDirectoryHoldingSomethingElse() throws {
        try withTemporaryDirectory { directory in
            _ = FileManager.default.createFile(atPath: directory + "/notes.txt", contents: Data("hi".utf8))
            #expect(throws: ImageStoreError.notAStore(path: directory, found: "a file named notes.txt")) {
                try ImageStore(path: directory)
            }
            #expect(FileManager.default.fileExists(atPath: directory + "/data.mdb") == false, "nothing was created")
        }
    }

    @Test func aCorruptDataFile() throws {
        try withTemporaryDirectory { directory in
            _ = FileManager.default.createFile(atPath: directory + "/data.mdb", contents: Data(repeating: 0x5A, count: 16384))
            #expect { try ImageStore(path: directory) } throws: { error in
                if case .corruptStore = error as? ImageStoreError { true } else { false }
            }
        }
    }

    @Test func anLMDBEnvironmentThatIsNotAStore() throws {
        try withTemporaryDirectory { directory in
            do {
                let environment = try Environment.open(path: directory)
                let other = try environment.openDatabase(named: "something-else")
                try environment.write { txn in try txn.put(other, key: [1], value: [2]) }
            }
            #expect(throws: ImageStoreError.notAStore(path: directory, found: "an LMDB database without imgstore's metadata")) {
                try ImageStore(path: directory)
            }
        }
    }

    @Test func aNewerFormatVersionIsRefused() throws {
        try withTemporaryDirectory { directory in
            try ImageStore(path: directory).close()
            do {
                let environment = try Environment.open(path: directory)
                let meta = try environment.openDatabase(named: "meta")
                try environment.write { txn in try txn.put(meta, key: Array("format".utf8), value: Array("IMGSTORE".utf8) + [3, 0, 0, 0]) }
            }
            #expect(throws: ImageStoreError.newerFormat(path: directory, found: 3, supported: 2)) {
                try ImageStore(path: directory)
            }
        }
    }

    @Test func aSecondOpenInTheSameProcessIsRefused() throws {
        try withTemporaryDirectory { directory in
            let store = try ImageStore(path: directory)
            #expect(throws: ImageStoreError.alreadyOpen(path: directory + "/.")) { try ImageStore(path: directory + "/.") }
            store.close()
            try ImageStore(path: directory + "/.").close()
        }
    }

    @Test func aClosedStoreRefusesCalls() throws {
        try withTemporaryDirectory { directory in
            let store = try ImageStore(path: directory)
            store.close()
            #expect(throws: ImageStoreError.closed(path: directory)) { try store.get("https://x.test/a") }
        }
    }
}
