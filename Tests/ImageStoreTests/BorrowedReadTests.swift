import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// `withImage(for:_:)`: the bytes are lent, verified, without a copy; a miss, an expired entry
/// and corrupt bytes never reach the body.
@Suite struct BorrowedReadTests {
    private let url = "https://x.test/borrowed"
    private let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })

    /// A configuration whose reads after a reopen come from LMDB (no memory tier).
    private func diskOnly(clock: ManualClock? = nil) -> ImageStore.Configuration {
        var configuration = makeConfiguration(clock: clock)
        configuration.memoryCostLimit = 0
        return configuration
    }

    /// Puts `entries` in a store at `directory`, closes it (applied to LMDB), and reopens it.
    private func reopened(_ directory: String, _ configuration: ImageStore.Configuration,
                          with entries: [(url: String, data: Data)], expiry: Expiry = .storeDefault) throws -> ImageStore {
        do {
            let store = try ImageStore(path: directory, configuration: configuration)
            for entry in entries { try store.put(entry.data, for: entry.url, expiry: expiry) }
            store.close()
        }
        return try ImageStore(path: directory, configuration: configuration)
    }

    // MARK: - Lending

    @Test func aDiskReadLendsTheMappedPagesOfTheDataFile() throws {
        try withTemporaryDirectory { directory throws in
            let store = try reopened(directory, diskOnly(), with: [(url, bytes)])
            defer { store.close() }
            let lent = try store.withImage(for: url) { info, lent in
                (info.url, info.byteCount, Data(lent), UInt(bitPattern: lent.baseAddress))
            }
            let (lentURL, byteCount, data, address) = try #require(lent)
            #expect(lentURL == url)
            #expect(byteCount == bytes.count)
            #expect(data == bytes)
            let mapped = try mappedFile(containing: address)
            #expect(mapped == directory + "/data.mdb", "the bytes are LMDB's memory map of data.mdb, not a copy")
            #expect(try store.statistics().hits == 1)
            try checkConsistency(of: store)
        }
    }

    @Test func theLogAndTheMemoryTierLendTheirBytesToo() throws {
        try withTemporaryDirectory { directory throws in
            var configuration = makeConfiguration()
            configuration.memoryCostLimit = 8 << 20
            do {
                let store = try ImageStore(path: directory, configuration: configuration)
                try store.put(bytes, for: url)  // not yet applied: the log's pending index holds it
                #expect(try store.withImage(for: url) { _, lent in Data(lent) } == bytes)
                store.close()
            }
            let store = try ImageStore(path: directory, configuration: configuration)
            defer { store.close() }
            #expect(try store.get(url)?.source == .disk)
            #expect(try store.get(url)?.source == .memory, "the first get filled the memory tier")
            #expect(try store.withImage(for: url) { _, lent in Data(lent) } == bytes)
            #expect(try store.statistics().hits == 3)
        }
    }

    @Test func aBorrowedReadNestsInForEachEntry() throws {
        try withTemporaryDirectory { directory throws in
            let entries = (0..<20).map { ("https://x.test/\($0)", Data(repeating: UInt8($0), count: 1000 + $0 * 512)) }
            let store = try reopened(directory, diskOnly(), with: entries)
            defer { store.close() }
            var seen: [String: Data] = [:]
            try store.forEachEntry(pageSize: 3) { info throws(ImageStoreError) in
                seen[info.url] = try store.withImage(for: info.url) { _, lent in Data(lent) }
            }
            #expect(seen == Dictionary(uniqueKeysWithValues: entries))
        }
    }

    @Test func whatTheBodyThrowsReachesTheCaller() throws {
        try withTemporaryDirectory { directory throws in
            let store = try reopened(directory, diskOnly(), with: [(url, bytes)])
            defer { store.close() }
            #expect(throws: ImageStoreError.emptyData) {
                try store.withImage(for: url) { (_, _) throws(ImageStoreError) in throw .emptyData }
            }
            #expect(try store.withImage(for: url) { _, lent in lent.count } == bytes.count, "the store is usable after")
        }
    }

    // MARK: - What never reaches the body

    @Test func aMissingEntryIsNilAndTheBodyNeverRuns() throws {
        try withTemporaryDirectory { directory throws in
            let store = try reopened(directory, diskOnly(), with: [(url, bytes)])
            defer { store.close() }
            var calls = 0
            #expect(try store.withImage(for: "https://x.test/absent") { _, _ in calls += 1 } == nil)
            try store.remove(url)
            #expect(try store.withImage(for: url) { _, _ in calls += 1 } == nil, "removed, not yet applied")
            #expect(calls == 0)
            #expect(try store.statistics().misses == 2)
        }
    }

    @Test func anExpiredEntryIsNilAndTheBodyNeverRuns() throws {
        try withTemporaryDirectory { directory throws in
            let clock = ManualClock()
            let store = try reopened(directory, diskOnly(clock: clock), with: [(url, bytes)], expiry: .after(.seconds(10)))
            defer { store.close() }
            var calls = 0
            #expect(try store.withImage(for: url) { _, _ in calls += 1 } != nil)
            clock.advance(by: 10)
            #expect(try store.withImage(for: url) { _, _ in calls += 1 } == nil)
            try store.put(bytes, for: url, expiry: .after(.seconds(5)))  // in the log's pending index
            clock.advance(by: 5)
            #expect(try store.withImage(for: url) { _, _ in calls += 1 } == nil)
            #expect(calls == 1)
        }
    }

    @Test func corruptBytesAreAChecksumMismatchAndTheBodyNeverRuns() throws {
        try withTemporaryDirectory { directory throws in
            let marker = Data("IMGSTORE-BORROW-MARKER".utf8)
            let victim = marker + bytes + marker
            do {
                let store = try ImageStore(path: directory, configuration: diskOnly())
                try store.put(victim, for: url)
                try store.put(Data(repeating: 7, count: 5000), for: "https://x.test/bystander")
                store.close()
            }
            let offsets = try FileCorruption.offsets(of: marker, in: directory + "/data.mdb")
            #expect(offsets.count == 2)
            try FileCorruption.flipByte(at: offsets[0] + marker.count + 1000, in: directory + "/data.mdb")
            let store = try ImageStore(path: directory, configuration: diskOnly())
            defer { store.close() }
            var calls = 0
            #expect {
                try store.withImage(for: url) { _, _ in calls += 1 }
            } throws: { error in
                guard case .checksumMismatch(let failed, _, _) = error as? ImageStoreError else { return false }
                return failed == url
            }
            #expect(calls == 0)
            #expect(try store.statistics().corruptReads == 1)
            #expect(try store.withImage(for: "https://x.test/bystander") { _, lent in Data(lent) } == Data(repeating: 7, count: 5000))
        }
    }

    // MARK: - The contract

    /// A call back into the store from the body would open a second read transaction on the
    /// thread (a deadlock against a compaction's swap of the data file): it traps.
    @Test func callingTheStoreFromInsideTheBodyTraps() async {
        await #expect(processExitsWith: .failure) {
            let directory = makeTemporaryDirectory()
            let store = try ImageStore(path: directory, configuration: makeConfiguration())
            try store.put(Data([1, 2, 3]), for: "https://x.test/a")
            _ = try store.withImage(for: "https://x.test/a") { (_, _) throws(ImageStoreError) in try store.get("https://x.test/a") }
        }
    }

    @Test func anotherStoreMayBeCalledFromInsideTheBody() throws {
        try withTemporaryDirectory { directory throws in
            let first = try reopened(directory + "/a", diskOnly(), with: [(url, bytes)])
            let second = try reopened(directory + "/b", diskOnly(), with: [(url, Data([9]))])
            defer { first.close(); second.close() }
            let both = try first.withImage(for: url) { (_, lent) throws(ImageStoreError) in
                (Data(lent), try second.get(url)?.data)
            }
            #expect(both?.0 == bytes)
            #expect(both?.1 == Data([9]))
        }
    }

    /// The path of the file mapped at `address` in this process, from `/proc/self/maps`.
    private func mappedFile(containing address: UInt) throws -> String? {
        // read(2) to the end: procfs reports size 0, and String(contentsOfFile:) cut the file
        // short in a ThreadSanitizer process (whose maps are long), losing data.mdb's line.
        let fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CocoaError(.fileReadUnknown) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        let maps = String(decoding: bytes, as: UTF8.self)
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            let range = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
            guard range.count == 2, range[0] <= address, address < range[1] else { continue }
            return fields.count == 6 ? fields[5].trimmingCharacters(in: .whitespaces) : nil
        }
        return nil
    }
}
