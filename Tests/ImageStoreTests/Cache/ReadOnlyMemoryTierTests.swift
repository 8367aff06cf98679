import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// A read-only store's memory tier while another process writes: its reads "see what the
/// writer has applied to LMDB" (`Configuration.readOnly`), so an entry kept in memory must not
/// outlive the writer's change to it.
@Suite struct ReadOnlyMemoryTierTests {
    private static let url = "https://damage.test/images/0.bin"  // `imgstore-test-child make`'s entry 0

    /// Makes a store of 4 entries in another process (`make`, seed 1), opens it read-only with a
    /// memory tier, reads entry 0 twice (the second time from memory), then runs `body` with the
    /// store's path, the reader and what its first read returned.
    private static func withEntryZeroInMemory(
        _ body: (_ path: String, _ reader: ImageStore, _ first: StoredImage) throws -> Void
    ) throws {
        try withTemporaryDirectory { directory throws in
            let path = directory + "/store"
            let reader = try makeStoreAndOpenReader(at: path)
            defer { reader.close() }
            let first = try #require(try reader.get(url))
            let again = try #require(try reader.get(url))
            #expect(first.source == .disk && again.source == .memory, "the second read came from memory")
            try body(path, reader, first)
        }
    }

    /// Makes the store of 4 entries in another process and opens it read-only with a memory tier.
    private static func makeStoreAndOpenReader(
        at path: String, lastCommitProbe: (@Sendable (UInt64) -> UInt64)? = nil
    ) throws -> ImageStore {
        try AdminRun.makeStore(at: path, count: 4, seed: 1)
        var configuration = ImageStore.Configuration()
        configuration.readOnly = true
        configuration.memoryCostLimit = 8 << 20
        configuration.lastCommitProbe = lastCommitProbe
        return try ImageStore(path: path, configuration: configuration)
    }

    @Test func anEntryAnotherProcessOverwroteIsNeverServedOldFromMemory() throws {
        try Self.withEntryZeroInMemory { path, reader, first throws in
            // Another process overwrites every entry and checkpoints: LMDB holds the new bytes.
            try AdminRun.makeStore(at: path, count: 4, seed: 2)
            let stored = try #require(try reader.info(for: Self.url), "the record, read from LMDB")
            #expect(stored.checksum != first.info.checksum, "seed 2 wrote other bytes")
            let after = try #require(try reader.get(Self.url))
            #expect(after.info.checksum == stored.checksum, "served the bytes the writer replaced (from \(after.source))")
            #expect(try reader.withImage(for: Self.url) { info, _ in info.checksum } == stored.checksum)

            // And once more, now that the new bytes may be in memory.
            #expect(try reader.get(Self.url)?.info.checksum == stored.checksum)
        }
    }

    @Test func anEntryAnotherProcessRemovedIsNeverServedFromMemory() throws {
        try Self.withEntryZeroInMemory { path, reader, _ throws in
            // Another process removes it (`imgstore-admin rm`, which applies it to LMDB as it closes).
            let removal = try ChildProcess.run(ChildProcess.product("imgstore-admin"), ["--store", path, "rm", Self.url])
            try #require(removal.status == 0, "\(removal.standardError)")
            #expect(try reader.info(for: Self.url) == nil, "gone from LMDB")
            #expect(try reader.get(Self.url) == nil, "served from memory after the writer removed it")
        }
    }

    /// LMDB reports a writer's commit (`mdb_env_info`, from the meta page) before new read
    /// transactions get it (the lock region's ID is set after the meta page's write returns).
    /// A reader that follows the commit in that window reads the snapshot before it: what it
    /// reads must not stay in memory, or it would be served after the commit became visible,
    /// when the tier no longer empties itself for it. The probe reports one commit more than
    /// LMDB while the reads run: the second read must come from LMDB again.
    @Test func bytesReadFromASnapshotOlderThanTheFollowedCommitAreNotKept() throws {
        try withTemporaryDirectory { directory throws in
            let reader = try Self.makeStoreAndOpenReader(at: directory + "/store", lastCommitProbe: { $0 + 1 })
            defer { reader.close() }
            let first = try #require(try reader.get(Self.url))
            let again = try #require(try reader.get(Self.url))
            #expect(first.source == .disk)
            #expect(again.source == .disk, "kept bytes read from a snapshot older than the commit it followed")
        }
    }
}
