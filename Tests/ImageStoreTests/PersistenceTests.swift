import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

@Suite struct PersistenceTests {
    @Test func entriesSurviveCloseAndReopen() throws {
        try withTemporaryDirectory { directory in
            var random = SeededGenerator()
            let blobs = (0..<20).map { _ in random.bytes(Int.random(in: 1...50_000, using: &random)) }
            do {
                let store = try ImageStore(path: directory, configuration: makeConfiguration())
                for (n, blob) in blobs.enumerated() { try store.put(blob, for: "https://x.test/\(n)") }
                store.close()
            }
            let reopened = try ImageStore(path: directory, configuration: makeConfiguration())
            defer { reopened.close() }
            for (n, blob) in blobs.enumerated() { #expect(try reopened.get("https://x.test/\(n)")?.data == blob) }
            try checkConsistency(of: reopened)
        }
    }

    @Test func anotherProcessReadsWhatThisOneWrote() throws {
        try withTemporaryDirectory { directory in
            let images = try Fixtures.images()
            do {
                let store = try ImageStore(path: directory)
                for (name, data) in images { try store.put(data, for: "https://x.test/\(name)") }
                store.close()
            }
            for (name, data) in images {
                let result = try ChildProcess.run(ChildProcess.product("imgstore-admin"),
                                                  ["--store", directory, "get", "https://x.test/\(name)"])
                #expect(result.status == 0, "\(result.standardError)")
                #expect(result.standardOutput == data, "\(name) byte for byte from a new process")
            }
        }
    }

    @Test func thisProcessReadsWhatAnotherWrote() throws {
        try withTemporaryDirectory { directory in
            let file = Fixtures.directory + "/photo-baseline.jpg"
            let result = try ChildProcess.run(ChildProcess.product("imgstore-admin"),
                                              ["--store", directory, "put", "https://x.test/p.jpg", file])
            #expect(result.status == 0, "\(result.standardError)")
            let store = try ImageStore(path: directory)
            defer { store.close() }
            #expect(try store.get("https://x.test/p.jpg")?.data == Data(contentsOf: URL(fileURLWithPath: file)))
        }
    }
}
