import Foundation
import ImageValidation
import Testing

@Suite("GIF and WebP headers, unknown formats, API")
struct GIFWebPTests {
    let validator = ImageValidator()

    // MARK: - GIF

    @Test func minimalGIFIsRecognised() throws {
        let facts = try validator.validate(Fixtures.gif(width: 3, height: 2, frames: 2, interlaced: true, comment: true))
        #expect(facts == ImageFacts(format: .gif, width: 3, height: 2, bitDepth: 8, components: 3, colorType: nil, isInterlaced: true, frameCount: 2))
        // Deep mode has no GIF decoder: it returns the structure facts.
        #expect(try validator.validate(Fixtures.gif(), mode: .deep).frameCount == 1)
    }

    @Test func damagedGIFsAreRejected() {
        let gif = Fixtures.gif()
        for length in 0..<gif.count { #expect(!verdict(gif.truncated(to: length)).isAccepted, "prefix \(length)") }
        #expect(verdict(gif + [0], limits: .strict) == .rejected(.trailingData))
        #expect(verdict(Fixtures.gif(width: 0)) == .rejected(.badHeader))
        var noImage = Array(gif[..<19]); noImage.append(0x3B)   // header + GCT, then trailer
        #expect(verdict(noImage) == .rejected(.badOrder))
        var badBlock = gif; badBlock[19] = 0x99
        #expect(verdict(badBlock) == .rejected(.badChunk))
    }

    // MARK: - WebP

    @Test func simpleWebPsAreRecognised() throws {
        let lossless = try validator.validate(Fixtures.riff([Fixtures.vp8l(width: 300, height: 200, alpha: true)]))
        #expect(lossless.format == .webp && lossless.width == 300 && lossless.height == 200 && lossless.components == 4)
        let lossy = try validator.validate(Fixtures.riff([Fixtures.vp8(width: 640, height: 480)]), mode: .deep)
        #expect(lossy.width == 640 && lossy.height == 480 && lossy.components == 3)
    }

    @Test func extendedAndAnimatedWebPsAreRecognised() throws {
        let still = Fixtures.riff([Fixtures.vp8x(width: 20, height: 10, flags: 0x10), Fixtures.chunk("ALPH", [0, 1, 2]), Fixtures.vp8(width: 20, height: 10), Fixtures.chunk("EXIF", [1, 2])])
        let facts = try validator.validate(still)
        #expect(facts.width == 20 && facts.height == 10 && facts.components == 4 && facts.frameCount == 1)
        let animated = Fixtures.riff([Fixtures.vp8x(width: 8, height: 8, flags: 0x02), Fixtures.chunk("ANIM", [0, 0, 0, 0, 0, 0]), Fixtures.anmf(width: 8, height: 8), Fixtures.anmf(width: 4, height: 4)])
        #expect(try validator.validate(animated).frameCount == 2)
    }

    @Test func damagedWebPsAreRejected() {
        let webp = Fixtures.riff([Fixtures.vp8l(width: 3, height: 3)])
        for length in 12..<webp.count { #expect(!verdict(webp.truncated(to: length)).isAccepted, "prefix \(length)") }
        #expect(verdict(webp + [0, 0], limits: .strict) == .rejected(.trailingData))
        #expect(verdict(Fixtures.riff([Fixtures.vp8l(width: 3, height: 3, version: 1)])) == .rejected(.badHeader))
        #expect(verdict(Fixtures.riff([Fixtures.chunk("JUNK", [1, 2, 3, 4])])) == .rejected(.badChunk))
        // VP8X canvas and image disagree.
        #expect(verdict(Fixtures.riff([Fixtures.vp8x(width: 20, height: 10, flags: 0), Fixtures.vp8(width: 21, height: 10)])) == .rejected(.badHeader))
        // VP8X without an image.
        #expect(verdict(Fixtures.riff([Fixtures.vp8x(width: 20, height: 10, flags: 0)])) == .rejected(.badOrder))
        // Canvas over the pixel limit.
        #expect(verdict(Fixtures.riff([Fixtures.vp8x(width: 16_000_000, height: 16, flags: 0x02)])) == .rejected(.limitExceeded))
    }

    // MARK: - Unknown formats and the API

    @Test(arguments: [[], [0x00], Array("hello world, not an image".utf8), [0x42, 0x4D, 0, 0, 0, 0], [0xFF, 0xD8], Array("RIFF\0\0\0\0WAVE".utf8)] as [[UInt8]])
    func unknownBytesAreAnUnknownFormat(bytes: [UInt8]) {
        do {
            _ = try validator.validate(bytes)
            Issue.record("accepted")
        } catch {
            #expect(error.isUnknownFormat)
            #expect(error.offset == 0)
        }
        #expect(ImageValidator.sniff(bytes) == .unknown)
    }

    @Test func allThreeEntryPointsAgree() throws {
        let bytes = try Corpus.bytes("pngsuite", "basn6a16.png")
        let a = try validator.validate(bytes)
        let b = try validator.validate(Data(bytes), mode: .structure)
        let c = try bytes.withUnsafeBytes { buffer in try validator.validate(buffer) }
        #expect(a == b && b == c)
        #expect(a == ImageFacts(format: .png, width: 32, height: 32, bitDepth: 16, components: 4, colorType: 6, isInterlaced: false, frameCount: 1))
    }

    @Test func errorsReadAsSentencesWithTheirOffset() throws {
        let bytes = try Corpus.bytes("libpng-testpngs/crashers", "badcrc.png")
        do {
            _ = try validator.validate(bytes)
        } catch {
            // `~=` matches any Error against a kind. (Swift 6.3.1 crashes compiling
            // `catch ImageValidationError.Kind.badChecksum` inside a typed-throws `do`, so call it directly.)
            #expect(ImageValidationError.Kind.badChecksum ~= (error as any Error))
            #expect(error.description.contains("CRC"))
            #expect(error.description.contains("offset \(error.offset)"))
            #expect(!error.isUnknownFormat)
        }
    }

    @Test func pixelLimitAppliesToEveryFormat() throws {
        var limits = ImageValidator.Limits()
        limits.maxPixels = 100
        #expect(verdict(try Corpus.bytes("pngsuite", "basn0g08.png"), limits: limits) == .rejected(.limitExceeded))
        #expect(verdict(try Corpus.bytes("jpeg", "testorig.jpg"), limits: limits) == .rejected(.limitExceeded))
        #expect(verdict(Fixtures.gif(width: 20, height: 20), limits: limits) == .rejected(.limitExceeded))
        #expect(verdict(Fixtures.riff([Fixtures.vp8l(width: 20, height: 20)]), limits: limits) == .rejected(.limitExceeded))
    }
}
