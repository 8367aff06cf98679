import Foundation
import ImageValidation

/// Byte-level damage for tests, after LevelDB's log_test helpers.
extension Array where Element == UInt8 {
    func flippingBit(_ bit: Int, at offset: Int) -> [UInt8] {
        var copy = self
        copy[offset] ^= UInt8(1 << bit)
        return copy
    }
    func truncated(to count: Int) -> [UInt8] { Array(self[..<count]) }
}

/// A test-side CRC-32 (ISO 3309, reflected, polynomial 0xEDB88320), written independently of zlib so the
/// tests do not trust the code under test to build their fixtures.
enum TestCRC32 {
    static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
    static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}

/// A PNG as its chunks, to rebuild files with chunks moved, repeated or rewritten (CRCs recomputed).
struct PNGChunks {
    struct Chunk { var type: String; var data: [UInt8] }
    var chunks: [Chunk]

    init(_ bytes: [UInt8]) {
        var pos = 8
        chunks = []
        while pos + 12 <= bytes.count {
            let length = Int(bytes[pos]) << 24 | Int(bytes[pos + 1]) << 16 | Int(bytes[pos + 2]) << 8 | Int(bytes[pos + 3])
            let type = String(decoding: bytes[(pos + 4)..<(pos + 8)], as: UTF8.self)
            chunks.append(Chunk(type: type, data: Array(bytes[(pos + 8)..<(pos + 8 + length)])))
            pos += 12 + length
        }
    }

    var bytes: [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        for chunk in chunks { out += Self.encode(chunk.type, chunk.data) }
        return out
    }

    static func encode(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        let crc = TestCRC32.checksum(typeBytes + data)
        return be32(UInt32(data.count)) + typeBytes + data + be32(crc)
    }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    func index(of type: String) -> Int? { chunks.firstIndex { $0.type == type } }
}

/// Outcome of one validation, for compact assertions.
enum Verdict: Equatable {
    case accepted(ImageFacts)
    case rejected(ImageValidationError.Kind)

    var isAccepted: Bool { if case .accepted = self { true } else { false } }
}

func verdict(_ bytes: [UInt8], _ mode: ValidationMode = .structure, limits: ImageValidator.Limits = .default) -> Verdict {
    do {
        return .accepted(try ImageValidator(limits: limits).validate(bytes, mode: mode))
    } catch {
        return .rejected(error.kind)
    }
}
