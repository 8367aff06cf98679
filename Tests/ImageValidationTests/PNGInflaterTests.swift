import Foundation
@testable import ImageValidation
import Testing

/// Deep PNG inflates the image data with libdeflate (at once) or zlib (streaming, for images above
/// `PNGZlibStream.wholeBufferLimit`): both must give the same verdict on every stream, damaged or not.
@Suite("PNG deep mode: the two inflaters agree")
struct PNGInflaterTests {
    enum Path: CaseIterable { case atOnce, streaming }

    /// The zlib-stream check alone, on one path: nil when it accepts, else the error's kind. Deep mode runs it
    /// only on files structure mode accepted, with their `facts`.
    func zlibVerdict(_ bytes: [UInt8], facts: ImageFacts, _ path: Path) -> ImageValidationError.Kind? {
        bytes.withUnsafeBytes { buffer -> ImageValidationError.Kind? in
            do throws(ImageValidationError) {
                try PNGZlibStream.check(ByteInput(buffer), facts: facts, wholeBufferLimit: path == .atOnce ? Int.max : 0)
                return nil
            } catch { return error.kind }
        }
    }

    /// The file as it is, then its stream joined into one IDAT and damaged there (CRCs recomputed): every byte
    /// flipped in two bits, every truncation, bytes after the stream, and the stream split over three IDATs.
    static func variants(_ name: String) throws -> [[UInt8]] {
        let original = PNGChunks(try Corpus.bytes("pngsuite", name))
        var png = original
        let first = try #require(png.index(of: "IDAT"))
        let data = png.chunks.filter { $0.type == "IDAT" }.flatMap(\.data)
        png.chunks.removeAll { $0.type == "IDAT" }
        png.chunks.insert(.init(type: "IDAT", data: data), at: first)
        let last = first
        var out: [[UInt8]] = [original.bytes, png.bytes]
        for offset in data.indices {
            for bit: UInt8 in [0x01, 0x10] {
                var damaged = png
                damaged.chunks[last].data[offset] ^= bit
                out.append(damaged.bytes)
            }
        }
        for cut in 1..<data.count {
            var short = png
            short.chunks[last].data.removeLast(cut)
            out.append(short.bytes)
        }
        var appended = png; appended.chunks[last].data += [0, 1]
        var extra = png; extra.chunks.insert(.init(type: "IDAT", data: [7]), at: last + 1)
        var split = png   // the same stream over three IDATs: valid
        split.chunks[last].data = Array(data.prefix(3))
        split.chunks.insert(.init(type: "IDAT", data: Array(data.dropFirst(3).dropLast(2))), at: last + 1)
        split.chunks.insert(.init(type: "IDAT", data: Array(data.suffix(2))), at: last + 2)
        out += [appended.bytes, extra.bytes, split.bytes]
        return out
    }

    @Test(arguments: ["basn2c08.png", "basn0g01.png", "basi6a16.png", "basn3p04.png", "oi9n2c16.png"])
    func bothInflatersGiveTheSameVerdictOnEveryDamagedStream(_ name: String) throws {
        var rejected = 0, accepted = 0, rejectedByStructure = 0
        for bytes in try Self.variants(name) {
            // Some truncations are too short to inflate to the image: structure mode rejects those already.
            guard case .accepted(let facts) = verdict(bytes) else { rejectedByStructure += 1; continue }
            let atOnce = zlibVerdict(bytes, facts: facts, .atOnce), streaming = zlibVerdict(bytes, facts: facts, .streaming)
            #expect(atOnce == streaming, "\(name): libdeflate \(String(describing: atOnce)), zlib \(String(describing: streaming))")
            if atOnce == nil { accepted += 1 } else { rejected += 1 }
        }
        // The sweep really exercised both outcomes: the original, joined and split streams pass, most flips fail,
        // and structure mode left nearly all of them to this check.
        #expect(accepted >= 3)
        #expect(rejected > accepted)
        #expect(rejectedByStructure * 4 < rejected)
    }

    /// The file as a whole goes through the at-once path for small images: the damage the streaming path
    /// caught before it existed is still caught through `validate`.
    @Test func smallImagesUseTheWholeBufferInflater() throws {
        let png = PNGChunks(try Corpus.bytes("pngsuite", "basn2c08.png"))
        let facts = try ImageValidator().validate(png.bytes)
        let raw = PNGStructure.rawImageBytes(width: facts.width, height: facts.height, depth: facts.bitDepth,
                                             colorType: facts.colorType ?? 0, interlaced: facts.isInterlaced)
        #expect(raw <= PNGZlibStream.wholeBufferLimit)
    }
}
