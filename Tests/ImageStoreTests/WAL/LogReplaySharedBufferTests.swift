import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Testing

/// Replay hands out the images it decodes as slices of the buffer a segment was read into,
/// not as copies, and reads a later segment into that buffer only once the batches cut from
/// it are released.
@Suite struct LogReplaySharedBufferTests {
    /// A crashed store whose log holds `count` puts of 1 000-byte images spread over several
    /// 4 KiB segments; returns the images by URL.
    private static func makeLog(in directory: String, count: Int) throws -> [String: Data] {
        var images: [String: Data] = [:]
        let store = try ImageStore(path: directory, configuration: LogTest.configuration(applyLog: false))
        for n in 0..<count {
            let url = "https://x.test/\(n)"
            let data = Data((0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) })
            try store.put(data, for: url)
            images[url] = data
        }
        store.abandonForTesting()
        return images
    }

    /// The start of the storage a `Data` slice shares (its first byte's address, less its offset).
    private static func storageStart(_ data: Data) -> UnsafeRawPointer? {
        data.withUnsafeBytes { $0.baseAddress.map { $0 - data.startIndex } }
    }

    private static func images(in batch: [SequencedEntry]) -> [(url: String, data: Data)] {
        batch.compactMap { if case let .put(record, data) = $0.entry { (record.url, data) } else { nil } }
    }

    /// With `awaitApplied`, segments alternate between two buffers: each call asks for every
    /// batch given up to the segment two before, the images of segments two apart share one
    /// storage (it was reused, not copied), and every image is a slice, not a copy. The first
    /// segment (4 KiB, shorter than `LogRecovery.headBytes`) is all in its head read, one
    /// storage of its own (freed once its batches are, so its address may come back): the
    /// buffers take the segments after it.
    @Test func imagesAreSlicesOfTwoBuffersThatAlternate() throws {
        try withTemporaryDirectory { directory throws in
            let written = try Self.makeLog(in: directory, count: 12)
            let segments = try LogTest.segments(directory).count
            try #require(segments >= 4)
            var held: [[SequencedEntry]] = []
            var released = 0
            var waits: [Int] = []
            var storagesBySegment: [Set<UnsafeRawPointer>] = []
            var givenThroughSegment: [Int] = []
            let recovery = LogRecovery(directory: directory, fileSystem: PosixLogFileSystem(), salvage: false)
            let (report, _) = try recovery.replay(appliedSequence: 0, apply: { batch in
                held.append(batch)
                for image in Self.images(in: batch) {
                    #expect(image.data == written[image.url])
                    #expect(image.data.startIndex > 0, "an image was copied out of its segment")
                }
                storagesBySegment[storagesBySegment.count - 1].formUnion(Self.images(in: batch).compactMap { Self.storageStart($0.data) })
                givenThroughSegment[givenThroughSegment.count - 1] = held.count
            }, awaitApplied: { count in
                waits.append(count)
                #expect(count <= held.count)
                // Release what was asked for, as the pipeline does once the batches are applied.
                while released < count {
                    held[released] = []
                    released += 1
                }
                storagesBySegment.append([])
                givenThroughSegment.append(held.count)
            })
            #expect(report.recordsReplayed == written.count)
            #expect(waits.count == report.segmentsRead)
            for (segment, count) in waits.enumerated() {
                #expect(count == (segment >= 2 ? givenThroughSegment[segment - 2] : 0))
            }
            let later = Set(storagesBySegment.dropFirst().flatMap { $0 })
            #expect(later.count == 2, "segments were not read into two reused buffers")
            #expect(storagesBySegment.first?.count == 1, "the first segment's images are slices of its head")
            for segment in storagesBySegment.indices.dropFirst(3) where !storagesBySegment[segment].isEmpty && !storagesBySegment[segment - 2].isEmpty {
                #expect(storagesBySegment[segment] == storagesBySegment[segment - 2])
            }
        }
    }

    /// The pipeline lets go of a batch before it counts it finished: once `waitUntilFinished`
    /// returns, the buffer the batches' images were cut from is the only holder of its storage,
    /// and the next read writes into it in place instead of copying it.
    @Test func thePipelineReleasesEachBatchBeforeCountingItFinished() throws {
        try withTemporaryDirectory { directory throws in
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            let pipeline = ReplayPipeline(tier: store.tier)
            var buffer = Data((0..<4_096).map { UInt8(truncatingIfNeeded: $0) })
            let storage = Self.storageStart(buffer)
            // Renewals of an entry LMDB does not hold: applying them changes nothing but applied-seq.
            let record = EntryRecord(url: "https://x.test/a", cacheKey: "https://x.test/a", byteCount: 100, checksum: 1,
                                     createdAt: 0, expiresAt: nil, lastAccess: 0, facts: nil)
            for n in 0..<3 {
                try pipeline.submit([SequencedEntry(sequence: UInt64(n + 1), entry: .renew(record, bytes: buffer[(100 * n)..<(100 * n + 100)]))])
            }
            pipeline.waitUntilFinished(3)
            buffer.withUnsafeMutableBytes { $0[0] = 0xFF }
            #expect(Self.storageStart(buffer) == storage, "a finished batch still held a slice of the buffer, so writing it copied it")
            try pipeline.finish()
        }
    }

    /// A batch held longer than `awaitApplied` asked for keeps its bytes: reading a later
    /// segment into the buffer copies it first instead of overwriting the slices.
    @Test func aBatchHeldPastItsBufferKeepsItsBytes() throws {
        try withTemporaryDirectory { directory throws in
            let written = try Self.makeLog(in: directory, count: 12)
            try #require(try LogTest.segments(directory).count >= 4)
            var held: [[SequencedEntry]] = []
            let recovery = LogRecovery(directory: directory, fileSystem: PosixLogFileSystem(), salvage: false)
            _ = try recovery.replay(appliedSequence: 0, apply: { held.append($0) }, awaitApplied: { _ in })
            let images = held.flatMap(Self.images(in:))
            #expect(images.count == written.count)
            for image in images { #expect(image.data == written[image.url]) }
        }
    }
}
