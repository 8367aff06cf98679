import Foundation
import ImageStore
import ImageStoreTestSupport
import LMDB
import Testing

/// With a custom key function (`cacheKey != url`) a record holds its URL and its cache key. A
/// flipped byte of the cache key breaks the key's hash, which every verify checks. A flipped byte
/// of the URL leaves the hash intact: only the key function can tell, so in-process `verify()`
/// re-derives the cache key with the configuration's function, and `imgstore-admin verify`,
/// which cannot run the caller's function, does not catch it (README, "`verify` on a live store").
@Suite struct VerifyKeyFunctionTests {
    /// Query strings are not part of the cache key.
    static let keyFunction: @Sendable (String) -> String = { $0.components(separatedBy: "?").first! }
    static let urlOffset = 80  // a record's URL starts after its fixed header (`StoreFormat.swift`)

    private func configuration(readOnly: Bool = false, keyFunction: Bool = true) -> ImageStore.Configuration {
        var configuration = makeConfiguration(validation: .rejectInvalid)
        configuration.readOnly = readOnly
        if keyFunction { configuration.keyFunction = Self.keyFunction }
        return configuration
    }

    /// The sample images at `https://x.test/NAME?v=1`, closed; returns how many.
    private func makeStore(_ directory: String) throws -> Int {
        let store = try ImageStore(path: directory, configuration: configuration())
        let images = try Fixtures.images()
        for (name, data) in images { try store.put(data, for: "https://x.test/\(name)?v=1") }
        store.close()
        return images.count
    }

    /// Flips one bit of the first entry's record, `offset` bytes into its URL or (`inCacheKey`)
    /// into the cache key stored after it, through LMDB as a bug or a bad disk would.
    private func flipRecordByte(_ directory: String, inCacheKey: Bool, offset: Int = 8) throws {
        let environment = try Environment.open(path: directory)
        let entries = try environment.openDatabase(named: "entries", create: false)
        try environment.write { txn in
            var key: [UInt8] = []
            try txn.scan(entries) { k, _ in key = Array(k); return false }
            var record = Array(try #require(try txn.get(entries, key: key)))
            let urlCount = Int(record[4]) | Int(record[5]) << 8 | Int(record[6]) << 16 | Int(record[7]) << 24
            record[Self.urlOffset + (inCacheKey ? urlCount : 0) + offset] ^= 0x01
            try txn.put(entries, key: key, value: record)
        }
    }

    private func verify(_ directory: String, repair: Bool = false, keyFunction: Bool = true) throws -> VerifyReport {
        let store = try ImageStore(path: directory, configuration: configuration(readOnly: !repair, keyFunction: keyFunction))
        defer { store.close() }
        return try store.verify(ImageStore.VerifyOptions(repair: repair))
    }

    @Test func inProcessVerifyRederivesTheCacheKeyWithTheKeyFunctionAndCatchesAFlippedURLByte() throws {
        try withTemporaryDirectory { directory in
            let count = try makeStore(directory)
            try flipRecordByte(directory, inCacheKey: false)  // "https://x.test" -> "https://y.test"
            let found = try verify(directory)
            #expect(found.problems.map(\.kind) == [.wrongKey], "\(found.problems)")
            #expect(found.problems.first?.detail.contains("key function") == true, "\(found.problems)")
            // Opened without the function, the store cannot tell (as imgstore-admin cannot).
            #expect(try verify(directory, keyFunction: false).problems == [])
            let repaired = try verify(directory, repair: true)
            #expect(repaired.problems.map(\.kind) == [.wrongKey] && repaired.unrepaired.isEmpty, "\(repaired.problems)")
            let again = try verify(directory)
            #expect(again.problems == [] && again.entriesChecked == count - 1)
        }
    }

    /// `imgstore-admin verify` checks the key's hash of the stored cache key: it catches a flipped
    /// cache-key byte (exit 4) but not a flipped URL byte (exit 0), as the README says.
    @Test(arguments: [false, true])
    func adminVerifyCatchesAFlippedCacheKeyByteButCannotRederiveTheKeyFromTheURL(inCacheKey: Bool) throws {
        try withTemporaryDirectory { directory in
            _ = try makeStore(directory)
            try flipRecordByte(directory, inCacheKey: inCacheKey)
            let run = try ChildProcess.run(AdminRun.binary, ["--store", directory, "verify"])
            if inCacheKey {
                #expect(run.status == 4, "\(run.output)\(run.standardError)")
                #expect(run.output.hasPrefix("wrong-key: https://x.test/"), "\(run.output)")
            } else {
                #expect(run.status == 0, "\(run.output)\(run.standardError)")
                #expect(run.output.hasPrefix("OK: "), "\(run.output)")
            }
        }
    }
}
