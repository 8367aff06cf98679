import Foundation
import ImageValidation
import Testing

/// Bytes after the end marker: accepted and counted by default, rejected by the strict policy.
@Suite("Trailing bytes: motion photos and vendor trailers by default, rejected when strict")
struct TrailingBytesTests {
    let validator = ImageValidator()
    let strict = ImageValidator(limits: .strict)

    // MARK: - Motion photo

    /// An Android motion photo: a JPEG whose APP1 XMP names the video's offset from the end (Camera
    /// `MicroVideoOffset`), then an MP4 (ISO/IEC 14496-12 boxes: `ftyp`, `mdat`) right after EOI.
    static func motionPhoto() throws -> (jpeg: [UInt8], photo: [UInt8], mp4: [UInt8]) {
        let jpeg = try Corpus.bytes("jpeg", "testorig.jpg")
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] { PNGChunks.be32(UInt32(8 + payload.count)) + Array(type.utf8) + payload }
        let ftyp = box("ftyp", Array("mp42".utf8) + PNGChunks.be32(0) + Array("isommp42".utf8))
        let mdat = box("mdat", (0..<3000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let mp4 = ftyp + mdat
        let xmp = Array("http://ns.adobe.com/xap/1.0/\0".utf8) + Array("""
            <x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">\
            <rdf:Description xmlns:GCamera="http://ns.google.com/photos/1.0/camera/" GCamera:MicroVideo="1" \
            GCamera:MicroVideoVersion="1" GCamera:MicroVideoOffset="\(mp4.count)"/></rdf:RDF></x:xmpmeta>
            """.utf8)
        let app1 = [0xFF, 0xE1] + [UInt8((xmp.count + 2) >> 8), UInt8((xmp.count + 2) & 0xFF)] + xmp
        let photo = Array(jpeg[..<2]) + app1 + Array(jpeg[2...])
        return (jpeg, photo + mp4, mp4)
    }

    @Test func motionPhotoIsAcceptedInBothModes() throws {
        let (_, motionPhoto, _) = try Self.motionPhoto()
        for mode in [ValidationMode.structure, .deep] {
            #expect(verdict(motionPhoto, mode).isAccepted, "\(mode)")
        }
    }

    @Test func motionPhotoRecordsTheVideoAsTrailingBytes() throws {
        let (jpeg, motionPhoto, mp4) = try Self.motionPhoto()
        let facts = try validator.validate(motionPhoto, mode: .deep)
        #expect(facts.trailingBytes == mp4.count)
        #expect(facts.width == 227 && facts.height == 149)
        #expect(try validator.validate(jpeg).trailingBytes == 0)
    }

    @Test func motionPhotoIsRejectedByTheStrictPolicy() throws {
        let (_, motionPhoto, mp4) = try Self.motionPhoto()
        do {
            _ = try strict.validate(motionPhoto)
            Issue.record("the strict policy accepted a motion photo")
        } catch {
            #expect(error.kind == .trailingData)
            #expect(error.offset == motionPhoto.count - mp4.count)
        }
    }

    // MARK: - Every format

    static let trailers: [[UInt8]] = [[0x00], [0xFF, 0xD9], [UInt8](repeating: 0xAB, count: 1000), (0..<4096).map { UInt8(truncatingIfNeeded: $0) }]

    static func images() throws -> [(String, [UInt8])] {
        [("png", try Corpus.bytes("pngsuite", "basn0g08.png")), ("jpeg", try Corpus.bytes("jpeg", "testorig.jpg")),
         ("gif", Fixtures.gif()), ("webp", Fixtures.riff([Fixtures.vp8l(width: 4, height: 3)]))]
    }

    /// 1, 2, 1 000 and 4 096 bytes of anything after IEND, EOI, the GIF trailer or the RIFF size.
    @Test func trailingBytesAreAcceptedByDefaultInBothModes() throws {
        for (format, image) in try Self.images() {
            for trailer in Self.trailers {
                for mode in [ValidationMode.structure, .deep] {
                    #expect(verdict(image + trailer, mode).isAccepted, "\(format) + \(trailer.count) bytes, \(mode)")
                }
            }
        }
    }

    @Test func trailingBytesAreCountedAndTheStrictPolicyRejectsThem() throws {
        for (format, image) in try Self.images() {
            #expect(try validator.validate(image).trailingBytes == 0, "\(format)")
            #expect(verdict(image, limits: .strict).isAccepted, "\(format) without trailing bytes, strict")
            for trailer in Self.trailers {
                let facts = try validator.validate(image + trailer, mode: .deep)
                #expect(facts.trailingBytes == trailer.count, "\(format)")
                #expect(facts == (try validator.validate(image + trailer)), "\(format): deep and structure facts differ")
                do {
                    _ = try strict.validate(image + trailer)
                    Issue.record("\(format) + \(trailer.count) bytes accepted by the strict policy")
                } catch {
                    #expect(error.kind == .trailingData, "\(format)")
                    #expect(error.offset == image.count, "\(format)")
                }
            }
        }
    }
}
