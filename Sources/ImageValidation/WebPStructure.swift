// WebP, after the WebP container specification (RFC 9649, "WebP Image Format"; section names below are its own)
// and the VP8 (RFC 6386 §9.1) and VP8L (RFC 9649 §3.2) bitstream headers.
//
//   file    = "RIFF" size(4, LE) "WEBP" chunk*      RIFF header: size counts from "WEBP" to the end
//   chunk   = fourCC(4) size(4, LE) payload(size) [pad byte if size is odd]
//   simple lossy     = "VP8 " chunk                  frame tag(3) start code 9D 01 2A, 14-bit width/height
//   simple lossless  = "VP8L" chunk                  signature 2F, 14-bit width−1 / height−1, alpha, version 0
//   extended         = "VP8X"(10) then ICCP? ANIM? (ANMF* | ALPH? VP8/VP8L) EXIF? XMP? and unknown chunks
//
// The bitstreams themselves are not decoded (deep mode has no WebP decoder and returns these facts).

enum WebPStructure {
    static func tag(_ input: ByteInput, _ p: Int) -> UInt32 { input.le32(p) }
    static func fourCC(_ s: StaticString) -> UInt32 {
        let p = s.utf8Start
        return UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | UInt32(p[3]) << 24
    }
    static let VP8 = fourCC("VP8 "), VP8L = fourCC("VP8L"), VP8X = fourCC("VP8X"), ALPH = fourCC("ALPH")
    static let ANIM = fourCC("ANIM"), ANMF = fourCC("ANMF"), ICCP = fourCC("ICCP"), EXIF = fourCC("EXIF"), XMP = fourCC("XMP ")

    struct Bitstream { var width: Int; var height: Int; var alpha: Bool }

    /// RFC 6386 §9.1 (VP8 key frame header) or RFC 9649 §3.2 (VP8L header), whichever `type` names.
    static func bitstream(_ input: ByteInput, type: UInt32, at p: Int, size: Int) throws(ImageValidationError) -> Bitstream {
        if type == VP8 {
            guard size >= 10 else { throw ImageValidationError(.badHeader, at: p, "VP8 chunk at offset \(p) is too short for a frame header") }
            let b0 = input.u8(p)
            // Frame tag: bit 0 = 0 for a key frame; bits 1–3 version ≤ 3; bits 5–23 first partition size.
            guard b0 & 1 == 0 else { throw ImageValidationError(.badHeader, at: p, "VP8 frame at offset \(p) is not a key frame") }
            guard (b0 >> 1) & 7 <= 3 else { throw ImageValidationError(.badHeader, at: p, "VP8 version \((b0 >> 1) & 7) is unknown") }
            let partition = input.le24(p) >> 5
            guard partition <= size - 10 else { throw ImageValidationError(.corruptData, at: p, "VP8 first partition (\(partition) bytes) exceeds the chunk") }
            guard input.u8(p + 3) == 0x9D, input.u8(p + 4) == 0x01, input.u8(p + 5) == 0x2A else {
                throw ImageValidationError(.badSignature, at: p + 3, "VP8 start code 9D 01 2A missing at offset \(p + 3)")
            }
            let w = input.le16(p + 6) & 0x3FFF, h = input.le16(p + 8) & 0x3FFF
            guard w >= 1 && h >= 1 else { throw ImageValidationError(.badHeader, at: p + 6, "VP8 frame is \(w)×\(h)") }
            return Bitstream(width: w, height: h, alpha: false)
        } else {
            guard size >= 5 else { throw ImageValidationError(.badHeader, at: p, "VP8L chunk at offset \(p) is too short for its header") }
            guard input.u8(p) == 0x2F else { throw ImageValidationError(.badSignature, at: p, "VP8L signature 2F missing at offset \(p)") }
            let bits = input.le32(p + 1)
            let w = Int(bits & 0x3FFF) + 1, h = Int((bits >> 14) & 0x3FFF) + 1
            guard bits >> 29 == 0 else { throw ImageValidationError(.badHeader, at: p + 1, "VP8L version \(bits >> 29) is unknown") }
            return Bitstream(width: w, height: h, alpha: (bits >> 28) & 1 == 1)
        }
    }

    static func validate(_ input: ByteInput, limits: ImageValidator.Limits) throws(ImageValidationError) -> ImageFacts {
        let n = input.count
        // RIFF header: the size field counts the bytes after itself.
        let riffSize = Int(input.le32(4))
        guard riffSize >= 4 else { throw ImageValidationError(.badHeader, at: 4, "RIFF size \(riffSize) is too small") }
        guard riffSize <= n - 8 else {
            throw ImageValidationError(.truncated, at: n, "The RIFF header claims \(riffSize + 8) bytes, the file has \(n)")
        }
        let end = 8 + riffSize
        let trailing = try TrailingBytes.check(after: end, in: input, limits: limits, marker: "the RIFF chunk")
        var pos = 12
        var first = true
        var facts = ImageFacts(
            format: .webp, width: 0, height: 0, bitDepth: 8, components: 3, colorType: nil, isInterlaced: false, frameCount: 1,
            trailingBytes: trailing)
        var extended = false, animated = false, sawImage = false, sawALPH = false
        var frames = 0
        var metadataBytes = 0

        while pos < end {
            guard end - pos >= 8 else { throw ImageValidationError(.truncated, at: end, "The WebP ends inside a chunk header at offset \(pos)") }
            let type = tag(input, pos)
            let size = Int(input.le32(pos + 4))
            let payload = pos + 8
            guard size <= end - payload else {
                throw ImageValidationError(.truncated, at: end, "WebP chunk at offset \(pos) claims \(size) bytes beyond the RIFF end")
            }
            let next = payload + size + (size & 1)

            if first {
                first = false
                switch type {
                case VP8, VP8L:
                    let b = try bitstream(input, type: type, at: payload, size: size)
                    facts.width = b.width; facts.height = b.height; facts.components = b.alpha ? 4 : 3
                    sawImage = true
                case VP8X:
                    // Extended format: flags |Rsv(2)|ICC|Alpha|EXIF|XMP|Anim|Rsv|, 3 reserved bytes,
                    // canvas width−1 and height−1 (24 bits LE each); their product fits in 32 bits.
                    guard size >= 10 else { throw ImageValidationError(.badHeader, at: pos, "VP8X chunk is \(size) bytes; 10 expected") }
                    let flags = input.u8(payload)
                    facts.width = input.le24(payload + 4) + 1
                    facts.height = input.le24(payload + 7) + 1
                    guard facts.width * facts.height <= 0xFFFF_FFFF else {
                        throw ImageValidationError(.badHeader, at: payload + 4, "VP8X canvas \(facts.width)×\(facts.height) exceeds 2^32-1 pixels")
                    }
                    facts.components = flags & 0x10 != 0 ? 4 : 3
                    animated = flags & 0x02 != 0
                    extended = true
                default:
                    throw ImageValidationError(.badChunk, at: pos, "The first WebP chunk must be VP8, VP8L or VP8X")
                }
                let (pixels, overflow) = facts.width.multipliedReportingOverflow(by: facts.height)
                guard !overflow && pixels <= limits.maxPixels else {
                    throw ImageValidationError(.limitExceeded, at: pos, "\(facts.width)×\(facts.height) pixels exceed the limit of \(limits.maxPixels)")
                }
                if !extended { pos = next; break }   // a simple file is one chunk
                pos = next
                continue
            }

            switch type {
            case VP8, VP8L:
                guard !animated else { throw ImageValidationError(.badOrder, at: pos, "Animated WebP holds a bare image chunk at offset \(pos)") }
                guard !sawImage else { throw ImageValidationError(.badOrder, at: pos, "A second image chunk at offset \(pos)") }
                let b = try bitstream(input, type: type, at: payload, size: size)
                // The still image must fill the canvas exactly.
                guard b.width == facts.width && b.height == facts.height else {
                    throw ImageValidationError(.badHeader, at: pos, "Image \(b.width)×\(b.height) does not match the VP8X canvas \(facts.width)×\(facts.height)")
                }
                sawImage = true
            case ALPH:
                guard !sawImage && !animated else { throw ImageValidationError(.badOrder, at: pos, "ALPH must precede the image chunk") }
                sawALPH = true
            case ANMF:
                guard animated else { throw ImageValidationError(.badOrder, at: pos, "ANMF in a file without the animation flag") }
                guard size >= 16 + 8 else { throw ImageValidationError(.badChunk, at: pos, "ANMF chunk at offset \(pos) is too short") }
                frames += 1
            case ICCP, EXIF, XMP:
                metadataBytes += size
                guard size <= limits.maxAncillaryChunkBytes && metadataBytes <= limits.maxMetadataBytes else {
                    throw ImageValidationError(.limitExceeded, at: pos, "WebP metadata chunk at offset \(pos) exceeds the metadata limits")
                }
            default:
                break   // ANIM and unknown chunks: the container spec says readers ignore unknown chunks.
            }
            pos = next
        }
        if pos < end && !extended {
            // RFC 9649 simple formats hold exactly one chunk; tolerate nothing after it inside the RIFF size.
            throw ImageValidationError(.badChunk, at: pos, "A simple WebP has data after its image chunk")
        }
        if animated {
            guard frames > 0 else { throw ImageValidationError(.badOrder, at: 12, "Animated WebP has no ANMF frame") }
            facts.frameCount = frames
        } else {
            guard sawImage else { throw ImageValidationError(.badOrder, at: 12, "Extended WebP has no VP8 or VP8L image chunk") }
        }
        if sawALPH { facts.components = 4 }
        return facts
    }
}
