import Foundation
import ImageValidation
import Testing

/// Damage made from valid files: truncation at every offset, bit flips, appended bytes, reordered chunks.
@Suite("Damage: truncation, bit flips, appended bytes, reordering")
struct DamageTests {
    let validator = ImageValidator()

    // MARK: - Truncation

    /// Every proper prefix of a valid file is rejected in structure mode (a missing IEND/EOI/trailer is the
    /// commonest corruption in downloaded images), and never accepted by deep mode either.
    @Test(arguments: [
        ("pngsuite", "basn0g01.png"), ("pngsuite", "basi6a16.png"), ("pngsuite", "s01n3p01.png"), ("pngsuite", "ctzn0g04.png"),
        ("jpeg", "testorig.jpg"), ("jpeg", "testimgari.jpg"), ("jpeg", "testimgint.jpg"),
    ])
    func everyTruncationIsRejected(folder: String, name: String) throws {
        let bytes = try Corpus.bytes(folder, name)
        #expect(verdict(bytes).isAccepted)
        var accepted: [Int] = []
        for length in 0..<bytes.count where verdict(bytes.truncated(to: length)).isAccepted {
            accepted.append(length)
        }
        #expect(accepted.isEmpty, "\(name): prefixes of length \(accepted.prefix(10)) accepted")
        // Deep mode sees the same prefixes; sample every 7th to keep the test fast.
        for length in stride(from: 0, to: bytes.count, by: 7) {
            #expect(!verdict(bytes.truncated(to: length), .deep).isAccepted)
        }
    }

    @Test func truncationIsReportedAsTruncatedAtTheEnd() throws {
        let bytes = try Corpus.bytes("jpeg", "testorig.jpg")
        do {
            _ = try validator.validate(bytes.truncated(to: bytes.count - 100))
            Issue.record("accepted")
        } catch {
            #expect(error.kind == .truncated)
            #expect(error.offset == bytes.count - 100)
            #expect(error.description.contains("EOI"))
        }
    }

    // MARK: - Bit flips

    /// CRC-32 detects every single-bit error, so every one-bit flip anywhere in a PNG is rejected by structure mode.
    @Test(arguments: ["basn0g01.png", "basn3p02.png", "tbbn3p08.png", "s03i3p01.png"])
    func everyBitFlipInAPNGIsRejected(name: String) throws {
        let bytes = try Corpus.bytes("pngsuite", name)
        var missed: [(Int, Int)] = []
        for offset in 0..<bytes.count {
            for bit in 0..<8 where verdict(bytes.flippingBit(bit, at: offset)).isAccepted {
                missed.append((offset, bit))
            }
        }
        #expect(missed.isEmpty, "\(name): flips accepted at \(missed.prefix(10))")
    }

    /// A JPEG has no checksum: a flip in a header may yield another valid image, and a flip in entropy data
    /// often decodes to different pixels. Flips in marker bytes and segment lengths must be caught by
    /// structure mode; across the whole file, no flip may crash either mode, and deep mode must catch
    /// more than structure mode.
    @Test func jpegBitFlips() throws {
        let bytes = try Corpus.bytes("jpeg", "testorig.jpg")
        let segments = jpegSegments(bytes)
        var structureRejected = 0, deepRejected = 0, total = 0
        for offset in 0..<bytes.count {
            for bit in [0, 3, 7] {
                let damaged = bytes.flippingBit(bit, at: offset)
                let s = verdict(damaged), d = verdict(damaged, .deep)
                total += 1
                if !s.isAccepted { structureRejected += 1 }
                if !d.isAccepted { deepRejected += 1 }
                // Deep mode runs structure first: it can never accept what structure rejects.
                if !s.isAccepted { #expect(!d.isAccepted) }
            }
        }
        // Marker bytes (FF and code) and segment lengths (high byte) of every header segment.
        for (start, _) in segments {
            for offset in [start, start + 1, start + 2] {
                let damaged = bytes.flippingBit(7, at: offset)
                #expect(!verdict(damaged).isAccepted, "flip at \(offset) (segment at \(start)) accepted")
            }
        }
        #expect(deepRejected > structureRejected)
        // Measured: structure rejects ~5% of these flips, deep ~14% (the rest decode to other pixels: JPEG has
        // no checksum, and jpeginfo -c / djpeg accept the same flips). Guard against a silent deep mode.
        print("jpegBitFlips: \(total) flips, structure rejected \(structureRejected), deep rejected \(deepRejected)")
        #expect(deepRejected * 10 > total, "deep mode rejected only \(deepRejected) of \(total) flips")
    }

    /// Header segments (marker offset, marker code) up to the first SOS, from the test's own tiny parser.
    func jpegSegments(_ bytes: [UInt8]) -> [(Int, UInt8)] {
        var out: [(Int, UInt8)] = []
        var pos = 2
        while pos + 4 <= bytes.count, bytes[pos] == 0xFF {
            let code = bytes[pos + 1]
            out.append((pos, code))
            if code == 0xDA { break }
            pos += 2 + (Int(bytes[pos + 2]) << 8 | Int(bytes[pos + 3]))
        }
        return out
    }

    /// Flips in the zlib stream that keep the CRC right (we recompute it) are visible only to deep mode.
    @Test func idatDamageWithAFixedCRCIsCaughtByDeepMode() throws {
        var png = PNGChunks(try Corpus.bytes("pngsuite", "basn2c08.png"))
        let i = try #require(png.index(of: "IDAT"))
        var caught = 0, tried = 0
        for offset in stride(from: 2, to: png.chunks[i].data.count, by: 5) {
            var damaged = png
            damaged.chunks[i].data[offset] ^= 0x10
            let bytes = damaged.bytes
            #expect(verdict(bytes).isAccepted)
            tried += 1
            if !verdict(bytes, .deep).isAccepted { caught += 1 }
        }
        _ = png.chunks.removeLast()
        #expect(caught * 10 >= tried * 8, "deep mode caught \(caught) of \(tried)")
    }

    /// The IDAT zlib stream of `name`, rewritten by `edit` (chunk CRCs recomputed), as a file.
    func editingZlibStream(_ name: String, _ edit: (inout [PNGChunks.Chunk], Int) -> Void) throws -> [UInt8] {
        var png = PNGChunks(try Corpus.bytes("pngsuite", name))
        let last = try #require(png.chunks.lastIndex { $0.type == "IDAT" })
        edit(&png.chunks, last)
        return png.bytes
    }

    /// RFC 1950 §2.2: the stream ends with the Adler-32 of the inflated data. A flip in the last deflate block
    /// that changes the data but not its length is caught only by it (basn2c08: byte 65 of 72, found by a sweep;
    /// libspng had all the rows by then and never read the checksum).
    @Test func aFlipOnlyTheAdler32CatchesIsRejectedByDeepMode() throws {
        let damaged = try editingZlibStream("basn2c08.png") { chunks, last in chunks[last].data[65] ^= 0x10 }
        #expect(verdict(damaged).isAccepted)
        #expect(verdict(damaged, .deep) == .rejected(.corruptData))
    }

    @Test func aZlibStreamWithoutItsAdler32IsRejectedByDeepMode() throws {
        for name in ["basn2c08.png", "basn0g01.png", "basi6a16.png"] {
            let damaged = try editingZlibStream(name) { chunks, last in chunks[last].data.removeLast(4) }
            #expect(verdict(damaged).isAccepted, "\(name)")
            #expect(verdict(damaged, .deep) == .rejected(.corruptData), "\(name)")
        }
    }

    /// PNG §10.1: the IDAT data is exactly one zlib stream; bytes after its end, in the last IDAT or in an IDAT
    /// of their own, are damage (an empty IDAT after it is harmless and accepted).
    @Test func bytesAfterTheZlibStreamAreRejectedByDeepMode() throws {
        for name in ["basn2c08.png", "basn0g01.png", "basi6a16.png"] {
            let inLastIDAT = try editingZlibStream(name) { chunks, last in chunks[last].data += [0] }
            let inNewIDAT = try editingZlibStream(name) { chunks, last in chunks.insert(.init(type: "IDAT", data: Array("junk".utf8)), at: last + 1) }
            let emptyIDAT = try editingZlibStream(name) { chunks, last in chunks.insert(.init(type: "IDAT", data: []), at: last + 1) }
            for damaged in [inLastIDAT, inNewIDAT] {
                #expect(verdict(damaged).isAccepted, "\(name)")
                #expect(verdict(damaged, .deep) == .rejected(.corruptData), "\(name)")
            }
            #expect(verdict(emptyIDAT, .deep).isAccepted, "\(name)")
        }
    }

    /// Every IDAT byte flipped (CRC recomputed): deep mode accepts only flips that leave the inflated bytes
    /// unchanged (unused bits of the last deflate byte).
    @Test func everyIDATFlipThatChangesTheImageIsRejectedByDeepMode() throws {
        let png = PNGChunks(try Corpus.bytes("pngsuite", "basn2c08.png"))
        let i = try #require(png.index(of: "IDAT"))
        var acceptedAt: [Int] = []
        for offset in 0..<png.chunks[i].data.count {
            var damaged = png
            damaged.chunks[i].data[offset] ^= 0x10
            if verdict(damaged.bytes, .deep).isAccepted { acceptedAt.append(offset) }
        }
        // Byte 67 is the last deflate byte; bit 4 there lies past the final block's end-of-block code.
        #expect(acceptedAt == [67])
    }

    // MARK: - Appended bytes

    // Bytes after the end marker are accepted and counted by default: see TrailingBytesTests.

    // MARK: - PNG chunk rules

    @Test func pngChunkOrderingRules() throws {
        let base = PNGChunks(try Corpus.bytes("pngsuite", "basn3p08.png"))
        let plte = try #require(base.index(of: "PLTE")), idat = try #require(base.index(of: "IDAT"))

        var noPLTE = base; noPLTE.chunks.remove(at: plte)
        #expect(verdict(noPLTE.bytes) == .rejected(.badOrder))

        var plteAfterIDAT = base
        let p = plteAfterIDAT.chunks.remove(at: plte)
        plteAfterIDAT.chunks.insert(p, at: idat)   // idat shifted down by one: PLTE now follows IDAT
        #expect(verdict(plteAfterIDAT.bytes) == .rejected(.badOrder))

        var split = base   // IDAT, tEXt, IDAT: not consecutive
        split.chunks.insert(.init(type: "tEXt", data: Array("a\0b".utf8)), at: idat + 1)
        split.chunks.insert(.init(type: "IDAT", data: []), at: idat + 2)
        #expect(verdict(split.bytes) == .rejected(.badOrder))

        var twoIDATs = base   // an extra empty IDAT right after: consecutive, fine
        twoIDATs.chunks.insert(.init(type: "IDAT", data: []), at: idat + 1)
        #expect(verdict(twoIDATs.bytes).isAccepted)

        var unknownCritical = base
        unknownCritical.chunks.insert(.init(type: "CgBI", data: [0, 0, 0, 0]), at: 1)
        #expect(verdict(unknownCritical.bytes) == .rejected(.unknownCritical))

        var unknownAncillary = base
        unknownAncillary.chunks.insert(.init(type: "prVt", data: [1, 2, 3]), at: 1)
        #expect(verdict(unknownAncillary.bytes).isAccepted)

        var nonEmptyIEND = base
        nonEmptyIEND.chunks[nonEmptyIEND.chunks.count - 1].data = [0]
        #expect(verdict(nonEmptyIEND.bytes) == .rejected(.badChunk))

        var noIEND = base; noIEND.chunks.removeLast()
        #expect(verdict(noIEND.bytes) == .rejected(.truncated))

        var ihdrNotFirst = base
        ihdrNotFirst.chunks.insert(.init(type: "tEXt", data: Array("a\0b".utf8)), at: 0)
        #expect(verdict(ihdrNotFirst.bytes) == .rejected(.badOrder))

        var badGAMA = base
        badGAMA.chunks.insert(.init(type: "gAMA", data: [0, 0, 1]), at: 1)
        #expect(verdict(badGAMA.bytes) == .rejected(.badChunk))
    }

    @Test(arguments: [(0, 3), (2, 4), (3, 16), (4, 4), (6, 1), (1, 8), (7, 8)])
    func illegalDepthAndColourTypePairsAreRejected(colorType: UInt8, depth: UInt8) throws {
        var png = PNGChunks(try Corpus.bytes("pngsuite", "basn0g08.png"))
        png.chunks[0].data[8] = depth
        png.chunks[0].data[9] = colorType
        #expect(verdict(png.bytes) == .rejected(.badHeader))
    }

    @Test func zeroAndHugeDimensionsAreRejected() throws {
        let base = PNGChunks(try Corpus.bytes("pngsuite", "basn0g08.png"))
        for (w, h, kind) in [(0, 32, ImageValidationError.Kind.badHeader), (32, 0, .badHeader), (0x8000_0000, 1, .badHeader), (100_000, 100_000, .limitExceeded)] {
            var png = base
            png.chunks[0].data.replaceSubrange(0..<8, with: PNGChunks.be32(UInt32(w)) + PNGChunks.be32(UInt32(h)))
            #expect(verdict(png.bytes) == .rejected(kind), "\(w)×\(h)")
        }
        // 9000×9000 is within the pixel limit but a few hundred IDAT bytes cannot inflate to 81 MB (deflate ≤ 1032:1).
        var bomb = base
        bomb.chunks[0].data.replaceSubrange(0..<8, with: PNGChunks.be32(9_000) + PNGChunks.be32(9_000))
        #expect(verdict(bomb.bytes) == .rejected(.corruptData))
    }

    @Test func ancillaryChunkLimitsAreEnforced() throws {
        var png = PNGChunks(try Corpus.bytes("pngsuite", "basn0g08.png"))
        png.chunks.insert(.init(type: "tEXt", data: Array("Comment\0".utf8) + [UInt8](repeating: 0x41, count: 5000)), at: 1)
        #expect(verdict(png.bytes).isAccepted)
        var tight = ImageValidator.Limits()
        tight.maxAncillaryChunkBytes = 4096
        #expect(verdict(png.bytes, limits: tight) == .rejected(.limitExceeded))
        tight = ImageValidator.Limits()
        tight.maxMetadataBytes = 1000
        #expect(verdict(png.bytes, limits: tight) == .rejected(.limitExceeded))
    }
}
