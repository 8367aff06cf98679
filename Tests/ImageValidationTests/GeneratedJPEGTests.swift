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

    @Test func cmykFromImageMagickIfAvailable() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/local/bin/convert") else { return }
        let ppm = Fixtures.tmp.appendingPathComponent("card.ppm"), out = Fixtures.tmp.appendingPathComponent("cmyk.jpg")
        try Data(Fixtures.ppm(width: 40, height: 30)).write(to: ppm)
        let result = try ChildProcess.run("/usr/local/bin/convert", [ppm.path, "-colorspace", "CMYK", out.path])
        guard result.status == 0, let data = FileManager.default.contents(atPath: out.path) else { return }
        let facts = try validator.validate(data, mode: .deep)
        #expect(facts.components == 4 && facts.width == 40)
    }
}

extension Array where Element == UInt8 {
    func replacing(at offset: Int, _ value: UInt8) -> [UInt8] { var c = self; c[offset] = value; return c }
}
