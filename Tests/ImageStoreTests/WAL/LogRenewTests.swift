import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// A refresh (what a `304 Not Modified` means) logs a renew record (log format version 3): the
/// entry's new record without its bytes. Logs of format version 2 still open and replay.
@Suite struct LogRenewTests {
    /// Bytes of records in the store's log segments (walking the length fields).
    private func logBytes(_ directory: String) throws -> Int {
        try LogTest.segments(directory).reduce(0) { $0 + (try LogTest.recordEnds(in: $1).last ?? 0) }
    }

    private func largeEntry() -> Data {
        var generator = SeededGenerator(seed: 304)
        return generator.bytes(3 << 20)
    }

    // MARK: - Renew records

    /// Failed before: the refresh logged the whole 3 MiB again.
    @Test func aRefreshOfALargeEntryAppendsOnlyASmallRecordAndReplaysIt() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory + "/store"
            let clock = ManualClock()
            var configuration = LogTest.configuration(applyLog: false)
            configuration.logSegmentBytes = 16 << 20
            configuration.clock = clock.source
            let data = largeEntry()
            let url = "https://x.test/large.png"
            let store = try ImageStore(path: path, configuration: configuration)
            try store.put(data, for: url, expiry: .after(.seconds(60)), validators: CacheValidators(etag: "\"v1\""))
            let before = try logBytes(path)
            clock.advance(by: 120)  // expired: the 304 renews it
            let renewed = try #require(try store.refresh(url, expiry: .after(.seconds(600)), validators: CacheValidators(etag: "\"v2\"")))
            let after = try logBytes(path)
            #expect(after - before < 1024, "the refresh appended \(after - before) bytes to the log (the entry is \(data.count))")
            #expect(renewed.expiresAt == clock.now.addingTimeInterval(600))
            // Served at once, before anything is applied (the log is never applied here).
            #expect(try store.image(for: url)?.data == data)
            #expect(try store.info(for: url)?.validators.etag == "\"v2\"")
            store.abandonForTesting()

            // Replay: the put, then the renew, as one would expect.
            let reopened = try ImageStore(path: path, configuration: LogTest.configuration().with(clock: clock))
            defer { reopened.close() }
            #expect(reopened.recoveryReport.recordsReplayed == 2)
            let info = try #require(try reopened.info(for: url))
            #expect(info.expiresAt == clock.now.addingTimeInterval(600))
            #expect(info.validators.etag == "\"v2\"")
            #expect(info.byteCount == data.count)
            #expect(try reopened.image(for: url)?.data == data)
            try checkConsistency(of: reopened)
        }
    }

    /// The renew record is applied by the applier as well as by replay, and a renew that a
    /// later remove overtakes stays removed.
    @Test func aRenewedEntryIsAppliedAndARemoveAfterItWins() throws {
        let clock = ManualClock()
        try withTemporaryStore(makeConfiguration(clock: clock)) { store in
            try store.put(Data(repeating: 7, count: 5000), for: "https://x.test/a", expiry: .after(.seconds(10)))
            try store.put(Data(repeating: 8, count: 5000), for: "https://x.test/b", expiry: .after(.seconds(10)))
            clock.advance(by: 20)
            #expect(try store.refresh("https://x.test/a", expiry: .after(.seconds(100))) != nil)
            #expect(try store.refresh("https://x.test/b", expiry: .after(.seconds(100))) != nil)
            #expect(try store.remove("https://x.test/b"))
            try store.checkpoint()  // everything applied to LMDB
            #expect(try store.info(for: "https://x.test/a")?.expiresAt == clock.now.addingTimeInterval(100))
            #expect(try store.image(for: "https://x.test/a")?.data == Data(repeating: 7, count: 5000))
            #expect(try store.info(for: "https://x.test/b") == nil)
            #expect(try store.refresh("https://x.test/b", expiry: .never) == nil)
        }
    }

    // MARK: - Older formats

    /// A store a version-2 build (main at 2e58072, `imgstore-test-child put DIR 3 sync
    /// keep-log`, then SIGKILL) left with three unapplied `.sync` puts: `Tests/Fixtures/wal-v2-store`.
    @Test func aStoreWhoseLogIsInFormatVersion2OpensAndReplaysIt() throws {
        try withTemporaryDirectory { directory throws in
            let path = directory + "/store"
            try FileManager.default.copyItem(atPath: Fixtures.directory + "/wal-v2-store", toPath: path)
            let watermark = path + "/" + LogTest.watermarkName
            #expect(try Data(contentsOf: URL(fileURLWithPath: watermark))[12] == 2, "the fixture's watermark says version 2")
            let acked: [(url: String, size: Int, checksum: UInt64)] = [
                ("https://x.test/0", 201, 5_225_801_710_956_326_008),
                ("https://x.test/1", 18686, 846_854_041_271_803_340),
                ("https://x.test/2", 5555, 587_963_425_364_541_973),
            ]
            do {
                let store = try ImageStore(path: path, configuration: makeConfiguration())
                defer { store.close() }
                #expect(store.recoveryReport.recordsReplayed == 3)
                #expect(store.recoveryReport.syncedWatermark == 3)
                for entry in acked {
                    let info = try #require(try store.info(for: entry.url))
                    #expect(info.byteCount == entry.size && info.checksum == entry.checksum, "\(entry.url)")
                }
                // The first open as writer rewrote the watermark as version 3 before logging.
                let bytes = try Data(contentsOf: URL(fileURLWithPath: watermark))
                #expect(bytes[12] == 3 || bytes[44] == 3, "a version-3 slot")
                #expect(try store.refresh(acked[1].url, expiry: .never) != nil)
                try checkConsistency(of: store)
            }
            let reopened = try ImageStore(path: path, configuration: makeConfiguration())
            defer { reopened.close() }
            #expect(try reopened.info(for: acked[1].url)?.expiresAt == nil)
            #expect(try reopened.entries().count == 3)
        }
    }
}

private extension ImageStore.Configuration {
    func with(clock: ManualClock) -> Self {
        var copy = self
        copy.clock = clock.source
        return copy
    }
}
