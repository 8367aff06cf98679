import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Testing

/// The consistent API of issue 16 §3: one expiry type, durability that is never optional,
/// `URL` overloads, MIME types, one source type, and the old spellings still working.
@Suite struct APIShapeTests {
    static let bytes = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31) })

    // MARK: - Durability

    @Test func durabilityNoneMeansNoWaitNotTheStoreDefault() throws {
        // Before: `durability: .none` on a `Durability?` parameter was `nil`, the default `.sync`,
        // so this put waited for the held write (and the sync after it).
        let gate = GatedLogFileSystem()
        try withTemporaryStore(LogTest.configuration(fileSystem: gate)) { store throws in
            gate.holdNextWrite()
            let returned = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                _ = try? store.put(Self.bytes, for: "https://x.test/none", durability: .none)
                returned.signal()
            }
            let inTime = returned.wait(timeout: .now() + 10) == .success
            gate.release()
            #expect(inTime, "a .none (.background) put returns without waiting for the log")
            if !inTime { returned.wait() }
            try store.checkpoint()
            #expect(try store.image(for: "https://x.test/none")?.data == Self.bytes)
        }
    }

    @Test func storeDefaultIsTheConfigurationsDurabilityAndCannotBeItsValue() throws {
        var configuration = makeConfiguration()
        configuration.durability = .batched(within: .milliseconds(50))
        try withTemporaryStore(configuration) { store throws in
            #expect(try store.resolved(.storeDefault) == .batched(within: .milliseconds(50)))
            #expect(try store.resolved(.sync) == .sync)
        }
        configuration.durability = .storeDefault
        try withTemporaryDirectory { directory throws in
            #expect(throws: ImageStoreError.invalidArgument(name: "Configuration.durability", value: "storeDefault",
                                                            allowed: "sync, batched or background")) {
                try ImageStore(path: directory, configuration: configuration)
            }
        }
    }

    // MARK: - Expiry

    @Test func oneExpiryTypeForPutRefreshAndTheConfiguration() throws {
        let clock = ManualClock()
        var configuration = makeConfiguration(clock: clock)
        configuration.defaultExpiry = .after(.seconds(100))
        try withTemporaryStore(configuration) { store throws in
            let now = clock.source()
            #expect(try store.put(Self.bytes, for: "https://x.test/default").expiresAt == now.addingTimeInterval(100))
            #expect(try store.put(Self.bytes, for: "https://x.test/after", expiry: .after(.seconds(30))).expiresAt
                    == now.addingTimeInterval(30))
            #expect(try store.put(Self.bytes, for: "https://x.test/at", expiry: .at(now.addingTimeInterval(45))).expiresAt
                    == now.addingTimeInterval(45))
            #expect(try store.put(Self.bytes, for: "https://x.test/never", expiry: .never).expiresAt == nil)
            #expect(try store.refresh("https://x.test/never", expiry: .after(.seconds(5)))?.expiresAt == now.addingTimeInterval(5))
            #expect(throws: ImageStoreError.self) { try store.put(Self.bytes, for: "https://x.test/bad", expiry: .after(.seconds(-1))) }
        }
        configuration.defaultExpiry = .storeDefault
        try withTemporaryDirectory { directory throws in
            #expect(throws: ImageStoreError.self) { try ImageStore(path: directory, configuration: configuration) }
        }
    }

    @Test func theLoadersIntervalsAreDurations() {
        let configuration = ImageLoader.Configuration()
        #expect(configuration.downloadTimeout == .seconds(30) && configuration.minLifetime == .seconds(60))
        #expect(configuration.defaultExpiry == .after(.seconds(86_400)) && configuration.negativeCacheLifetime == .seconds(10))
        #expect(configuration.maxLifetime == .seconds(30 * 86_400) && configuration.maxStaleness == nil)
    }

    // MARK: - Names and overloads

    @Test func urlOverloadsReachTheSameEntry() throws {
        try withTemporaryStore { store throws in
            let url = URL(string: "https://x.test/u.png")!
            try store.put(Self.bytes, for: url)
            #expect(try store.image(for: url)?.data == Self.bytes)
            #expect(try store.info(for: "https://x.test/u.png")?.byteCount == Self.bytes.count)
            #expect(try store.contains(url))
            #expect(try store.remove(url))
        }
    }

    @Test func mimeTypesForContentType() {
        #expect(ImageFormat.png.mimeType == "image/png")
        #expect(ImageFormat.jpeg.mimeType == "image/jpeg")
        #expect(ImageFormat.gif.mimeType == "image/gif")
        #expect(ImageFormat.webp.mimeType == "image/webp")
        #expect(ImageFormat.unknown.mimeType == "application/octet-stream")
    }

    @Test func oneSourceTypeForStoredAndLoadedImages() {
        let stored: StoredImage.Source = .memory
        let loaded: LoadedImage.Source = stored
        #expect(loaded == ImageSource.memory)
    }

    @Test func valueTypesHavePublicInitialisers() {
        let info = EntryInfo(url: "https://x.test/i", byteCount: 3, createdAt: Date(timeIntervalSince1970: 0))
        #expect(info.lastAccessedAt == info.createdAt && info.facts == nil)
        #expect(StoredImage(data: Data([1, 2, 3]), info: info).source == .disk)
        #expect(StoreStatistics().entryCount == 0)
        #expect(SweepReport().entryCount == 0)
        #expect(VerifyReport().unrepaired.isEmpty)
    }

    @available(*, deprecated, message: "checks the deprecated spellings")
    @Test func theOldSpellingsStillWork() throws {
        try withTemporaryStore { store throws in
            try store.put(Self.bytes, for: "https://x.test/old", ttl: ImageStore.never, durability: nil)
            #expect(try store.get("https://x.test/old")?.info.image == nil)
            #expect(try store.refresh("https://x.test/old", ttl: 60) != nil)
            #expect(try store.sweepExpired().entries == 0)
        }
    }
}
