import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

@Suite struct RoundTripTests {
    // MARK: - Byte for byte

    @Test(arguments: [1, 100, 4096, 65_537, 1 << 20, 5 << 20 + 3])
    func bytesComeBackExactly(size: Int) throws {
        var random = SeededGenerator(seed: UInt64(size))
        let data = random.bytes(size)
        try withTemporaryStore { store in
            let info = try store.put(data, for: "https://cdn.example.com/img/\(size).bin")
            #expect(info.byteCount == size)
            let back = try #require(try store.get("https://cdn.example.com/img/\(size).bin"))
            #expect(back.data == data)
            #expect(back.info == info)
        }
    }

    @Test func overwriteReplacesBytesAndCounters() throws {
        try withTemporaryStore { store in
            let url = "https://cdn.example.com/a.png"
            try store.put(Data(repeating: 1, count: 1000), for: url)
            try store.put(Data(repeating: 2, count: 300), for: url)
            #expect(try store.get(url)?.data == Data(repeating: 2, count: 300))
            let stats = try store.statistics()
            #expect(stats.entryCount == 1)
            #expect(stats.logicalBytes == 300)
        }
    }

    @Test func removeAndRemoveAll() throws {
        try withTemporaryStore { store in
            for n in 0..<10 { try store.put(Data(repeating: UInt8(n), count: 10 + n), for: "https://x.test/\(n)") }
            #expect(try store.remove("https://x.test/3"))
            #expect(try !store.remove("https://x.test/3"))
            #expect(try store.get("https://x.test/3") == nil)
            #expect(try store.contains("https://x.test/4"))
            #expect(try store.statistics().entryCount == 9)
            try store.removeAll()
            #expect(try store.statistics().entryCount == 0)
            #expect(try store.statistics().logicalBytes == 0)
            #expect(try store.get("https://x.test/4") == nil)
        }
    }

    @Test func equivalentURLSpellingsFindTheSameEntry() throws {
        try withTemporaryStore { store in
            try store.put(Data([1, 2, 3]), for: "HTTPS://CDN.Example.COM:443/Path/A.png#fragment")
            let back = try #require(try store.get("https://cdn.example.com/Path/A.png"))
            #expect(back.data == Data([1, 2, 3]))
            #expect(back.info.url == "https://cdn.example.com/Path/A.png")
            #expect(try store.get("https://cdn.example.com/path/a.png") == nil, "paths stay case-sensitive")
        }
    }

    @Test func listingReturnsMetadataOfEveryEntry() throws {
        try withTemporaryStore { store in
            for n in 0..<25 { try store.put(Data(count: n + 1), for: "https://x.test/\(n)") }
            let entries = try store.entries()
            #expect(Set(entries.map(\.url)) == Set((0..<25).map { "https://x.test/\($0)" }))
            #expect(entries.reduce(0) { $0 + $1.byteCount } == (1...25).reduce(0, +))
        }
    }

    @Test func statisticsCountHitsMissesAndPuts() throws {
        try withTemporaryStore { store in
            try store.put(Data([9]), for: "https://x.test/a")
            _ = try store.get("https://x.test/a")
            _ = try store.get("https://x.test/b")
            let stats = try store.statistics()
            #expect(stats.puts == 1)
            #expect(stats.hits >= 1)
            #expect(stats.misses >= 1)
            #expect(stats.usedBytes > 0 && stats.fileBytes > 0 && stats.mapSize >= stats.usedBytes)
        }
    }

    // MARK: - Real images

    @Test func sampleImagesAreValidatedAndKeepTheirFacts() throws {
        try withTemporaryStore(makeConfiguration(validation: .rejectInvalid)) { store in
            for (name, data) in try Fixtures.images() {
                let info = try store.put(data, for: "https://x.test/\(name)")
                let facts = try #require(info.image, "\(name) has decoded facts")
                #expect(facts.width > 0 && facts.height > 0)
                #expect(facts.format == (name.hasSuffix(".png") ? .png : .jpeg))
                let back = try #require(try store.get("https://x.test/\(name)"))
                #expect(back.data == data)
                #expect(back.info.image == facts)
            }
        }
    }

    // MARK: - Expiry (the TTL work builds on this)

    @Test func expiredEntriesReadAsAbsent() throws {
        let clock = ManualClock()
        try withTemporaryStore(makeConfiguration(clock: clock)) { store in
            try store.put(Data([1]), for: "https://x.test/short", expiry: .after(.seconds(60)))
            try store.put(Data([2]), for: "https://x.test/forever")
            clock.advance(by: 59)
            #expect(try store.get("https://x.test/short") != nil)
            clock.advance(by: 1)
            #expect(try store.get("https://x.test/short") == nil)
            #expect(try store.contains("https://x.test/short") == false)
            #expect(try store.get("https://x.test/forever") != nil)
        }
    }
}

@Suite struct StaleAndValidatorTests {
    @Test func expiredEntriesAreAvailableAsStaleOnRequest() throws {
        let clock = ManualClock()
        try withTemporaryStore(makeConfiguration(clock: clock)) { store throws in
            try store.put(Data([1, 2]), for: "https://x.test/a", expiry: .after(.seconds(10)))
            #expect(try store.get("https://x.test/a", allowingStale: true)?.isStale == false)
            clock.advance(by: 11)
            #expect(try store.get("https://x.test/a") == nil)
            let stale = try #require(try store.get("https://x.test/a", allowingStale: true))
            #expect(stale.isStale)
            #expect(stale.data == Data([1, 2]))
        }
    }

    @Test func validatorsAreKeptAndRefreshExtendsLifeWithoutNewBytes() throws {
        let clock = ManualClock()
        try withTemporaryStore(makeConfiguration(clock: clock)) { store throws in
            let validators = CacheValidators(etag: "W/\"abc\"", lastModified: "Tue, 15 Nov 1994 12:45:26 GMT")
            try store.put(Data([7, 7]), for: "https://x.test/a", expiry: .after(.seconds(10)), validators: validators)
            #expect(try store.get("https://x.test/a")?.info.validators == validators)
            clock.advance(by: 20)
            let refreshed = try #require(try store.refresh("https://x.test/a", expiry: .after(.seconds(60))))
            #expect(refreshed.validators == validators)
            #expect(refreshed.expiresAt == clock.now.addingTimeInterval(60))
            let image = try #require(try store.get("https://x.test/a"))
            #expect(image.data == Data([7, 7]))
            #expect(!image.isStale)
            #expect(try store.refresh("https://x.test/missing", expiry: .after(.seconds(1))) == nil)
        }
    }
}
