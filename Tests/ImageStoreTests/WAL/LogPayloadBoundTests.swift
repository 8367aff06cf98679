import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// What makes a record valid is the format's, not the opener's configuration.
@Suite struct LogPayloadBoundTests {
    /// Every configuration an opener of the store could have: the writer's own, the defaults
    /// (`imgstore-admin`), and smaller limits.
    static let openers: [(maxEntryBytes: Int, maxURLBytes: Int)] = [
        (8 << 20, 1 << 20), (64 << 20, 1 << 20), (1 << 20, 1 << 20), (64 << 10, 4096), (1, 32),
    ]

    @Test(arguments: 0..<openers.count)
    func anAcknowledgedLargePutIsReplayedWhateverTheOpenersLimits(opener: Int) throws {
        try withTemporaryDirectory { directory throws in
            let image = Data((0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 13) })
            var writer = LogTest.configuration(applyLog: false)
            writer.maxEntryBytes = 8 << 20
            writer.logSegmentBytes = 16 << 20
            let store = try ImageStore(path: directory, configuration: writer)
            try store.put(image, for: "https://x.test/large", durability: .sync)
            try store.put(LogTest.smallEntry(1).data, for: LogTest.smallEntry(1).url, durability: .sync)
            store.abandonForTesting()  // a crash: both records only in the log

            var configuration = LogTest.configuration()
            (configuration.maxEntryBytes, configuration.maxURLBytes) = Self.openers[opener]
            let reopened = try ImageStore(path: directory, configuration: configuration)
            defer { reopened.close() }
            #expect(reopened.recoveryReport.recordsReplayed == 2)
            #expect(reopened.recoveryReport.tornBytesDropped == 0)
            #expect(try reopened.get("https://x.test/large")?.data == image)
        }
    }
}
