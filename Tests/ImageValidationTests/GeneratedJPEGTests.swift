import Foundation
import ImageStoreTestSupport
import ImageValidation
import Testing

/// JPEGs made at test time with Debian's cjpeg/jpegtran (libjpeg-turbo-progs): progressive, restart markers,
/// arithmetic coding, greyscale, subsampling.
@Suite("Generated JPEGs: progressive, restart markers, arithmetic, greyscale")
struct GeneratedJPEGTests {
    let validator = ImageValidator()

    static let variants: [[String]] = [
        ["-progressive"], ["-restart", "1"], ["-restart", "1", "-progressive"], ["-arithmetic"],
        ["-arithmetic", "-progressive"], ["-grayscale"], ["-sample", "2x2"], ["-sample", "1x1"], ["-optimize"],
        ["-quality", "100"], ["-restart", "3B", "-sample", "2x2"], ["-baseline", "-quality", "5"],
    ]

    @Test(arguments: variants)
    func cjpegVariantIsAcceptedInBothModes(args: [String]) throws {
        let jpeg = try Fixtures.cjpeg(args, width: 67, height: 45)
        let facts = try validator.validate(jpeg)
        #expect(facts.width == 67 && facts.height == 45)
        #expect(facts.isInterlaced == args.contains("-progressive"))
        #expect(facts.components == (args.contains("-grayscale") ? 1 : 3))
        #expect(try validator.validate(jpeg, mode: .deep) == facts)
    }

    @Test func progressiveJPEGFromJpegtranHasManyScans() throws {
        let original = try Corpus.bytes("jpeg", "testorig.jpg")
        let progressive = try Fixtures.run("jpegtran", ["-progressive"], input: original)
        let sosCount = zip(progressive, progressive.dropFirst()).filter { $0 == 0xFF && $1 == 0xDA }.count
        #expect(sosCount >= 6)
        let facts = try validator.validate(progressive, mode: .deep)
        #expect(facts.isInterlaced && facts.width == 227 && facts.height == 149)
        // Every truncation of a many-scan file is still rejected.
        for length in stride(from: 0, to: progressive.count, by: 3) {
            #expect(!verdict(progressive.truncated(to: length)).isAccepted)
        }
    }

    @Test func tooManyScansAreALimit() throws {
        let progressive = try Fixtures.cjpeg(["-progressive"])
        var limits = ImageValidator.Limits()
        limits.maxJPEGScans = 3
        #expect(verdict(progressive, limits: limits) == .rejected(.limitExceeded))
    }

    /// With `-restart 1` every MCU row is an interval; renumbering one RST marker breaks the modulo-8 sequence.
    @Test func restartMarkersOutOfSequenceAreCorrupt() throws {
        let jpeg = try Fixtures.cjpeg(["-restart", "1"], width: 64, height: 64)
        let rsts = (0..<(jpeg.count - 1)).filter { jpeg[$0] == 0xFF && (0xD0...0xD7).contains(jpeg[$0 + 1]) }
        #expect(rsts.count >= 3)
        var damaged = jpeg
        damaged[rsts[1] + 1] = 0xD5
        #expect(verdict(damaged) == .rejected(.corruptData))
        // Dropping DRI leaves RST markers that no restart interval allows.
        let dri = try #require((0..<(jpeg.count - 1)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xDD })
        let noDRI = Array(jpeg[..<dri] + jpeg[(dri + 6)...])
        #expect(verdict(noDRI) == .rejected(.corruptData))
    }

    @Test func missingHuffmanOrQuantisationTablesAreRejected() throws {
        let jpeg = try Fixtures.cjpeg([])
        for marker: UInt8 in [0xC4, 0xDB] {
            var out = jpeg
            // Remove every segment with this marker (before the first scan).
            var pos = 2
            while pos + 4 <= out.count, out[pos] == 0xFF, out[pos + 1] != 0xDA {
                let length = Int(out[pos + 2]) << 8 | Int(out[pos + 3])
                if out[pos + 1] == marker { out.removeSubrange(pos..<(pos + 2 + length)) } else { pos += 2 + length }
            }
            #expect(verdict(out) == .rejected(.badOrder), "without FF\(String(marker, radix: 16))")
        }
    }

    @Test func sofHeaderValuesAreChecked() throws {
        let jpeg = try Fixtures.cjpeg([])
        let sof = try #require((0..<(jpeg.count - 1)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        func with(_ offset: Int, _ value: UInt8) -> [UInt8] { var c = jpeg; c[sof + offset] = value; return c }
        #expect(verdict(with(4, 12)) == .rejected(.badHeader))                 // baseline precision 12
        #expect(verdict(with(7, 0).replacing(at: sof + 8, 0)) == .rejected(.badHeader))   // width 0
        #expect(verdict(with(11, 0x50)) == .rejected(.badHeader))              // sampling factor 5
        #expect(verdict(with(12, 4)) == .rejected(.badHeader))                 // quantisation table 4
        #expect(verdict(with(9, 5)) == .rejected(.badHeader))                  // 5 components vs length
        // Height 0 is legal only with a DNL segment after the first scan.
        #expect(verdict(with(5, 0).replacing(at: sof + 6, 0)) == .rejected(.badHeader))
    }

    // MARK: - Entropy-coded data (the scan for markers)

    /// The entropy walk skips FF00 pairs 32 bytes at a time: a marker at any offset (so at every position in a
    /// block, and straddling two) must still end the scan where the byte-by-byte walk would.
    @Test func aMarkerAtAnyOffsetOfTheEntropyCodedDataIsFound() throws {
        let jpeg = try Fixtures.cjpeg(["-restart", "2"], width: 96, height: 64)
        let sos = try #require((0..<(jpeg.count - 1)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xDA })
        let dataStart = sos + 2 + (Int(jpeg[sos + 2]) << 8 | Int(jpeg[sos + 3]))
        var missed: [Int] = []
        for offset in dataStart..<(jpeg.count - 2) {
            // FF 12 is a reserved marker (Table B.1): wherever it lands, the file is rejected.
            var damaged = jpeg
            damaged[offset] = 0xFF
            damaged[offset + 1] = 0x12
            if verdict(damaged).isAccepted { missed.append(offset) }
        }
        #expect(missed.isEmpty, "reserved marker missed at \(missed.prefix(10))")
        // Cut just after an FF of the entropy-coded data: the walk must report truncation, never read past the end.
        for offset in dataStart..<(jpeg.count - 2) where jpeg[offset] == 0xFF {
            #expect(verdict(jpeg.truncated(to: offset + 1)) == .rejected(.truncated))
        }
    }

    // MARK: - CMYK and YCCK (four-component JPEGs from real encoders)

    /// The Adobe APP14 segment's colour transform (Adobe TN 5116): 0 = CMYK (or RGB), 1 = YCbCr, 2 = YCCK.
    static func adobeTransform(_ jpeg: [UInt8]) -> UInt8? {
        let marker = Array("Adobe".utf8)
        guard let at = (0..<(jpeg.count - 12)).first(where: { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xEE && Array(jpeg[($0 + 4)..<($0 + 9)]) == marker })
        else { return nil }
        return jpeg[at + 15]
    }

    /// A four-component JPEG must pass deep mode: the decoder is asked for a pixel format CMYK/YCCK converts to.
    func expectFourComponentJPEGIsValid(_ jpeg: [UInt8], transform: UInt8, _ encoder: String) throws {
        #expect(Self.adobeTransform(jpeg) == transform, "\(encoder) wrote Adobe transform \(Self.adobeTransform(jpeg).map(String.init) ?? "none")")
        let facts = try validator.validate(jpeg)
        #expect(facts.components == 4 && facts.width == 40 && facts.height == 30)
        #expect(try validator.validate(jpeg, mode: .deep) == facts)
    }

    /// ImageMagick's `-colorspace CMYK` writes YCCK (Adobe transform 2).
    @Test(.enabled(if: Fixtures.hasImageMagick, Fixtures.noImageMagick))
    func ycckJPEGFromImageMagickIsValidInDeepMode() throws {
        let ppm = Fixtures.tmp.appendingPathComponent("card-im.ppm"), out = Fixtures.tmp.appendingPathComponent("ycck-im.jpg")
        try Data(Fixtures.ppm(width: 40, height: 30)).write(to: ppm)
        _ = try Fixtures.run(try Fixtures.executable("magick", "convert"), [ppm.path, "-colorspace", "CMYK", out.path])
        try expectFourComponentJPEGIsValid([UInt8](try Data(contentsOf: out)), transform: 2, "ImageMagick")
    }

    /// Pillow's CMYK JPEG is plain CMYK (Adobe transform 0), written by libjpeg from Pillow's CMYK pixels.
    @Test(.enabled(if: Fixtures.hasPillow, Fixtures.noPillow))
    func cmykJPEGFromPillowIsValidInDeepMode() throws {
        let ppm = Fixtures.tmp.appendingPathComponent("card-pil.ppm"), out = Fixtures.tmp.appendingPathComponent("cmyk-pil.jpg")
        try Data(Fixtures.ppm(width: 40, height: 30)).write(to: ppm)
        let script = "import sys\nfrom PIL import Image\nImage.open(sys.argv[1]).convert('CMYK').save(sys.argv[2], quality=90)\n"
        _ = try Fixtures.run(try Fixtures.executable("python3"), ["-c", script, ppm.path, out.path])
        try expectFourComponentJPEGIsValid([UInt8](try Data(contentsOf: out)), transform: 0, "Pillow")
    }

    /// ImageMagick's YCCK file made progressive by jpegtran (libjpeg-turbo-progs, which keeps the colour space):
    /// the progressive decode path with four components.
    @Test(.enabled(if: Fixtures.hasImageMagick, Fixtures.noImageMagick))
    func progressiveYCCKJPEGFromJpegtranIsValidInDeepMode() throws {
        let ppm = Fixtures.tmp.appendingPathComponent("card-jt.ppm"), out = Fixtures.tmp.appendingPathComponent("ycck-jt.jpg")
        try Data(Fixtures.ppm(width: 40, height: 30)).write(to: ppm)
        _ = try Fixtures.run(try Fixtures.executable("magick", "convert"), [ppm.path, "-colorspace", "CMYK", out.path])
        let progressive = try Fixtures.run("jpegtran", ["-progressive"], input: [UInt8](try Data(contentsOf: out)))
        try expectFourComponentJPEGIsValid(progressive, transform: 2, "jpegtran")
        #expect(try validator.validate(progressive, mode: .deep).isInterlaced)
    }

    // MARK: - Huffman tables (§B.2.4.2, §C)

    /// The DHT segments before the first scan: (offset of the table's Tc|Th byte, class, the 16 counts' total).
    static func huffmanTables(_ jpeg: [UInt8]) -> [(at: Int, tc: UInt8, total: Int)] {
        var out: [(Int, UInt8, Int)] = []
        var pos = 2
        while pos + 4 <= jpeg.count, jpeg[pos] == 0xFF, jpeg[pos + 1] != 0xDA {
            let length = Int(jpeg[pos + 2]) << 8 | Int(jpeg[pos + 3])
            if jpeg[pos + 1] == 0xC4 {
                var t = pos + 4
                while t + 17 <= pos + 2 + length {
                    let total = jpeg[(t + 1)...(t + 16)].reduce(0) { $0 + Int($1) }
                    out.append((t, jpeg[t] >> 4, total))
                    t += 17 + total
                }
            }
            pos += 2 + length
        }
        return out
    }

    /// A DC table symbol is a difference category, 0…15 for DCT (§F.1.2.1.1): a flipped high bit makes 16 or
    /// more, which libjpeg refuses ("Bogus Huffman table definition") and structure mode must too.
    @Test func dcHuffmanSymbolAbove15IsRejected() throws {
        for jpeg in [try Fixtures.cjpeg([]), try Corpus.bytes("jpeg", "testorig.jpg")] {
            let dcTables = Self.huffmanTables(jpeg).filter { $0.tc == 0 }
            #expect(dcTables.count == 2)
            for table in dcTables {
                for v in 0..<table.total {
                    for bit in 4..<8 {
                        let damaged = jpeg.flippingBit(bit, at: table.at + 17 + v)
                        #expect(verdict(damaged) == .rejected(.badChunk), "DC table at \(table.at), symbol \(v), bit \(bit)")
                    }
                }
            }
        }
    }

    /// Every flip in the 16 code-length counts breaks Kraft's inequality (§C: the codes must fit their lengths,
    /// the all-ones code reserved) or the count of symbols the segment holds.
    @Test func everyFlipInAHuffmanCodeLengthCountIsRejected() throws {
        let jpeg = try Fixtures.cjpeg(["-optimize"])
        var accepted: [(Int, Int)] = []
        for table in Self.huffmanTables(jpeg) {
            for offset in (table.at + 1)...(table.at + 16) {
                for bit in 0..<8 where verdict(jpeg.flippingBit(bit, at: offset)).isAccepted { accepted.append((offset, bit)) }
            }
        }
        #expect(accepted.isEmpty, "count flips accepted at \(accepted.prefix(10))")
    }

    /// The same check on tables that share one DHT segment (as many cameras write them): a miscounted table shifts
    /// every later table, which must still be caught.
    @Test func flipsInAHuffmanCountOfAMergedDHTSegmentAreRejected() throws {
        let jpeg = try Fixtures.cjpeg([])
        var head: [UInt8] = [0xFF, 0xD8], tables: [UInt8] = [], firstDHT: Int?
        var pos = 2
        while jpeg[pos + 1] != 0xDA {
            let length = Int(jpeg[pos + 2]) << 8 | Int(jpeg[pos + 3])
            if jpeg[pos + 1] == 0xC4 {
                if firstDHT == nil { firstDHT = head.count }
                tables += jpeg[(pos + 4)..<(pos + 2 + length)]
            } else { head += jpeg[pos..<(pos + 2 + length)] }
            pos += 2 + length
        }
        let segment = [0xFF, 0xC4, UInt8((tables.count + 2) >> 8), UInt8((tables.count + 2) & 0xFF)] + tables
        let at = try #require(firstDHT)
        let merged = Array(head[..<at]) + segment + Array(head[at...]) + Array(jpeg[pos...])
        #expect(try validator.validate(merged, mode: .deep).width == 64)
        var accepted: [(Int, Int)] = []
        for table in Self.huffmanTables(merged) {
            for offset in (table.at + 1)...(table.at + 16) {
                for bit in 0..<8 where verdict(merged.flippingBit(bit, at: offset)).isAccepted { accepted.append((offset, bit)) }
            }
        }
        #expect(accepted.isEmpty, "count flips accepted at \(accepted.prefix(10))")
    }
}

extension Array where Element == UInt8 {
    func replacing(at offset: Int, _ value: UInt8) -> [UInt8] { var c = self; c[offset] = value; return c }
}
