import Foundation

/// Damages files the way disks and crashes do, for corruption tests.
public enum FileCorruption {
    /// XORs the byte at `offset` of the file at `path` with `mask`.
    public static func flipByte(at offset: Int, in path: String, mask: UInt8 = 0x01) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        guard let byte = try handle.read(upToCount: 1)?.first else { throw CorruptionError.offsetOutOfRange(offset) }
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data([byte ^ mask]))
    }

    /// Overwrites `count` bytes at `offset` with `byte`.
    public static func overwrite(_ count: Int, at offset: Int, in path: String, with byte: UInt8 = 0xA5) throws {
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(repeating: byte, count: count))
    }

    /// Every offset at which `pattern` occurs in the file at `path`.
    public static func offsets(of pattern: Data, in path: String) throws -> [Int] {
        let contents = try Data(contentsOf: URL(fileURLWithPath: path))
        var found: [Int] = []
        var start = contents.startIndex
        while let range = contents.range(of: pattern, in: start..<contents.endIndex) {
            found.append(range.lowerBound - contents.startIndex)
            start = range.lowerBound + 1
        }
        return found
    }

    public enum CorruptionError: Error { case offsetOutOfRange(Int) }
}
