import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Helpers shared by the write-ahead-log tests.
enum LogTest {
    /// A configuration with small segments and validation off.
    static func configuration(applyLog: Bool = true, durability: Durability = .sync,
                              fileSystem: (any LogFileSystem)? = nil, salvage: Bool = false) -> ImageStore.Configuration {
        var configuration = makeConfiguration()
        configuration.applyLog = applyLog
        configuration.durability = durability
        configuration.logSegmentBytes = 4096
        configuration.salvageDamagedLog = salvage
        if let fileSystem { configuration.logFileSystem = fileSystem }
        return configuration
    }

    /// The log segment files in a store directory, in order.
    static func segments(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasPrefix("wal-0") }.sorted().map { directory + "/" + $0 }
    }

    /// The byte offsets where records end in a segment (walking the length fields).
    static func recordEnds(in path: String) throws -> [Int] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var ends: [Int] = []
        var offset = 0
        while offset + 32 <= bytes.count, bytes[offset + 12] != 0 {
            let length = Int(bytes[offset + 8]) | Int(bytes[offset + 9]) << 8 | Int(bytes[offset + 10]) << 16 | Int(bytes[offset + 11]) << 24
            offset += 32 + length
            ends.append(offset)
        }
        return ends
    }

    /// The log's synced-watermark file (log format version 2).
    static let watermarkName = "wal-synced"

    /// Copies a store directory (its LMDB data file and log segments, not its locks). Without
    /// `watermark`, the copy's log reads as format version 1 (no synced watermark).
    static func copyStore(_ source: String, to destination: String, watermark: Bool = false) throws {
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: source)
        where name == "data.mdb" || name.hasPrefix("wal-0") || (watermark && name == watermarkName) {
            try FileManager.default.copyItem(atPath: source + "/" + name, toPath: destination + "/" + name)
        }
    }

    /// For every byte of the first segment's records in the store at `original`: a copy of the
    /// store in `directory` with that byte flipped, handed to `body` with the offset and the
    /// record ends, then deleted.
    static func forEachFlippedCopy(of original: String, in directory: String,
                                   _ body: (_ copy: String, _ offset: Int, _ ends: [Int]) throws -> Void) throws {
        let segment = try #require(try segments(original).first)
        let name = URL(fileURLWithPath: segment).lastPathComponent
        let ends = try recordEnds(in: segment)
        for offset in 0..<ends.last! {
            let copy = directory + "/flip-\(offset)"
            try copyStore(original, to: copy)
            try FileCorruption.flipByte(at: offset, in: copy + "/" + name, mask: 0x10)
            try body(copy, offset, ends)
            try FileManager.default.removeItem(atPath: copy)
        }
    }

    /// Small entries for logs short enough to sweep byte by byte.
    static func smallEntry(_ n: Int) -> (url: String, data: Data) {
        ("https://x.test/\(n)", Data((0..<(20 + n * 7)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) }))
    }

    /// Writes `count` small entries to a new store that never applies its log, then abandons
    /// it (as a crash would): the log holds every record and LMDB none.
    static func makeCrashedStore(at directory: String, count: Int) throws {
        let store = try ImageStore(path: directory, configuration: configuration(applyLog: false))
        for n in 0..<count { try store.put(smallEntry(n).data, for: smallEntry(n).url) }
        store.abandonForTesting()
    }

    /// A log of `synced` small entries written with `.sync`, then `unsynced` more written (not
    /// synced) with `.batched`, copied to `copy` as a SIGKILL at that moment would leave it
    /// (watermark included). LMDB applies nothing, so every record is unapplied.
    static func makeKilledStore(at directory: String, copy: String, synced: Int, unsynced: Int) throws {
        var configuration = configuration(applyLog: false, durability: .batched(within: .seconds(3600)))
        configuration.logSegmentBytes = 1 << 20
        let store = try ImageStore(path: directory, configuration: configuration)
        for n in 0..<synced { try store.put(smallEntry(n).data, for: smallEntry(n).url, durability: .sync) }
        for n in synced..<(synced + unsynced) { try store.put(smallEntry(n).data, for: smallEntry(n).url) }
        try copyStore(directory, to: copy, watermark: true)
        store.abandonForTesting()
    }

    /// The acknowledged writes a child printed: URL → (size, checksum).
    static func acknowledged(in output: String) -> [String: (size: Int, checksum: UInt64)] {
        var acked: [String: (Int, UInt64)] = [:]
        for line in output.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            let fields = line.split(separator: " ")
            guard fields.count == 4, fields[0] == "acked", let size = Int(fields[2]), let sum = UInt64(fields[3]) else { continue }
            acked[String(fields[1])] = (size, sum)
        }
        return acked
    }
}
