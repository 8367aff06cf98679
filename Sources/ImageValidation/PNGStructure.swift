import CDeflate

// PNG structure, after the PNG specification (W3C, third edition; section numbers below refer to it; the same
// rules are in ISO/IEC 15948:2003 and RFC 2083).
//
//   file   = signature(8) chunk*                       §5.2
//   chunk  = length(4, BE, ≤ 2³¹−1) type(4) data(length) crc(4)      §5.3
//   crc    = CRC-32 (ISO 3309, as zlib's crc32) over type and data  §5.3, annex D
//   type   = 4 ASCII letters; bit 5 of byte 0 set = ancillary, byte 2 (reserved) uppercase   §5.4
//
// Validity conditions checked here, each once per byte:
//   1. the signature is exact                                        §5.2
//   2. every chunk lies inside the input and its CRC matches         §5.3
//   3. IHDR is first, 13 bytes, and legal                            §5.6, §11.2.1
//   4. PLTE: required for colour type 3, forbidden for 0 and 4, once, before IDAT, 1…2^depth entries   §11.2.2
//   5. IDAT: at least one, all consecutive                            §5.6, §11.2.3
//   6. IEND: last and empty                                           §11.2.4
//   7. unknown critical chunks are rejected                           §5.4
//   8. known ancillary chunks have their fixed lengths, their ordering, and appear at most once   §5.6, §11.3
//   9. the IDAT bytes could possibly inflate to the image (deflate cannot exceed 1032:1)   RFC 1951
// Bytes after IEND are counted (`ImageFacts.trailingBytes`), or rejected when `Limits.allowTrailingBytes` is false.

enum PNGStructure {
    static let signature: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
        (0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A)

    // Chunk types as big-endian UInt32s.
    static func fourCC(_ s: StaticString) -> UInt32 {
        let p = s.utf8Start
        return UInt32(p[0]) << 24 | UInt32(p[1]) << 16 | UInt32(p[2]) << 8 | UInt32(p[3])
    }
    static let IHDR = fourCC("IHDR"), PLTE = fourCC("PLTE"), IDAT = fourCC("IDAT"), IEND = fourCC("IEND")
    static let tRNS = fourCC("tRNS"), cHRM = fourCC("cHRM"), gAMA = fourCC("gAMA"), iCCP = fourCC("iCCP")
    static let sBIT = fourCC("sBIT"), sRGB = fourCC("sRGB"), bKGD = fourCC("bKGD"), hIST = fourCC("hIST")
    static let pHYs = fourCC("pHYs"), sPLT = fourCC("sPLT"), tIME = fourCC("tIME"), eXIf = fourCC("eXIf")
    static let acTL = fourCC("acTL"), fcTL = fourCC("fcTL"), fdAT = fourCC("fdAT"), cICP = fourCC("cICP")

    static func name(_ type: UInt32) -> String {
        let bytes = [UInt8(type >> 24), UInt8(type >> 16 & 0xFF), UInt8(type >> 8 & 0xFF), UInt8(type & 0xFF)]
        return String(decoding: bytes, as: UTF8.self)
    }

    static func validate(_ input: ByteInput, limits: ImageValidator.Limits) throws(ImageValidationError) -> ImageFacts {
        let n = input.count
        // §5.2 signature.
        let sig = withUnsafeBytes(of: signature) { Array($0) }
        for i in 0..<8 {
            guard i < n else { throw ImageValidationError(.truncated, at: n, "The PNG signature is cut short") }
            guard input.u8(i) == sig[i] else {
                throw ImageValidationError(.badSignature, at: i, "The PNG signature is damaged (byte \(i) is \(input.u8(i)), expected \(sig[i]))")
            }
        }

        var pos = 8
        var width = 0, height = 0, depth = 0, colorType = 0, interlaced = false
        var paletteEntries = 0
        var sawPLTE = false
        var idatState = 0              // 0: none yet, 1: inside the IDAT run, 2: run ended
        var idatBytes = 0
        var metadataBytes = 0
        var frameCount = 1
        var seenOnce = Set<UInt32>()   // chunks allowed at most once (§5.6 table 7)
        var sawIEND = false

        while pos < n {
            let chunkStart = pos
            guard n - pos >= 12 else {
                throw ImageValidationError(.truncated, at: n, "The file ends inside the chunk header at offset \(pos)")
            }
            // §5.3: "A four-byte unsigned integer giving the number of bytes in the chunk's data field …
            // limited to 2³¹−1 bytes."
            let length32 = input.be32(pos)
            guard length32 <= 0x7FFF_FFFF else {
                throw ImageValidationError(.badChunk, at: pos, "Chunk length \(length32) exceeds 2^31-1")
            }
            let length = Int(length32)
            let type = input.be32(pos + 4)
            // §5.4: type bytes are restricted to A–Z and a–z.
            for k in 0..<4 {
                let c = input.u8(pos + 4 + k) | 0x20
                guard c >= 0x61 && c <= 0x7A else {
                    throw ImageValidationError(.badChunk, at: pos + 4, "Chunk type at offset \(pos + 4) is not four ASCII letters")
                }
            }
            guard length <= n - pos - 12 else {
                throw ImageValidationError(.truncated, at: n, "Chunk \(name(type)) at offset \(pos) claims \(length) bytes but the file ends first")
            }
            // §5.4: the reserved bit (bit 5 of the third byte) must be 0 in this version of PNG.
            guard input.u8(pos + 6) & 0x20 == 0 else {
                throw ImageValidationError(.badChunk, at: pos + 4, "Chunk type \(name(type)) has the reserved bit set")
            }
            // §5.3: CRC over type and data, the ISO 3309 / ITU-T V.42 CRC-32. It is structure mode's per-byte cost;
            // libdeflate computes the same value as zlib's crc32 with carry-less multiplication, about 9x as fast here.
            let crc = libdeflate_crc32(0, input.base.advanced(by: pos + 4), length + 4)
            let stored = input.be32(pos + 8 + length)
            guard UInt32(truncatingIfNeeded: crc) == stored else {
                throw ImageValidationError(.badChecksum, at: pos + 8 + length, "Chunk \(name(type)) at offset \(pos) has a bad CRC")
            }
            let data = pos + 8
            let isCritical = input.u8(pos + 4) & 0x20 == 0   // §5.4 ancillary bit

            func fail(_ kind: ImageValidationError.Kind, _ why: String) -> ImageValidationError {
                ImageValidationError(kind, at: chunkStart, "\(name(type)) chunk at offset \(chunkStart): \(why)")
            }

            // §5.6: IHDR shall be first.
            if chunkStart == 8 && type != IHDR { throw fail(.badOrder, "the first chunk must be IHDR") }
            // §5.6: IDAT chunks shall be consecutive.
            if idatState == 1 && type != IDAT { idatState = 2 }

            switch type {
            case IHDR:
                guard chunkStart == 8 else { throw fail(.badOrder, "IHDR must appear once, first") }
                guard length == 13 else { throw fail(.badHeader, "IHDR length must be 13, is \(length)") }
                // §11.2.1: width and height 1…2³¹−1.
                let w = input.be32(data), h = input.be32(data + 4)
                guard w >= 1 && w <= 0x7FFF_FFFF, h >= 1 && h <= 0x7FFF_FFFF else {
                    throw fail(.badHeader, "width \(w) and height \(h) must be 1…2^31-1")
                }
                width = Int(w); height = Int(h)
                depth = Int(input.u8(data + 8)); colorType = Int(input.u8(data + 9))
                // §11.2.1 table 11: allowed bit depths per colour type.
                let legal: Bool
                switch colorType {
                case 0: legal = [1, 2, 4, 8, 16].contains(depth)
                case 3: legal = [1, 2, 4, 8].contains(depth)
                case 2, 4, 6: legal = depth == 8 || depth == 16
                default: legal = false
                }
                guard legal else { throw fail(.badHeader, "colour type \(colorType) with bit depth \(depth) is not allowed") }
                // §11.2.1: compression method 0, filter method 0, interlace 0 or 1.
                guard input.u8(data + 10) == 0 else { throw fail(.badHeader, "unknown compression method \(input.u8(data + 10))") }
                guard input.u8(data + 11) == 0 else { throw fail(.badHeader, "unknown filter method \(input.u8(data + 11))") }
                let il = input.u8(data + 12)
                guard il <= 1 else { throw fail(.badHeader, "unknown interlace method \(il)") }
                interlaced = il == 1
                let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
                guard !overflow && pixels <= limits.maxPixels else {
                    throw fail(.limitExceeded, "\(width)×\(height) pixels exceed the limit of \(limits.maxPixels)")
                }
            case PLTE:
                // §11.2.2
                guard !sawPLTE else { throw fail(.badOrder, "PLTE appears twice") }
                guard idatState == 0 else { throw fail(.badOrder, "PLTE must precede IDAT") }
                guard colorType != 0 && colorType != 4 else { throw fail(.badOrder, "PLTE is not allowed for colour type \(colorType)") }
                guard length % 3 == 0, length >= 3, length <= 768 else { throw fail(.badChunk, "PLTE length \(length) is not 3…768 and a multiple of 3") }
                paletteEntries = length / 3
                if colorType == 3 && paletteEntries > 1 << depth {
                    throw fail(.badChunk, "\(paletteEntries) palette entries exceed 2^\(depth)")
                }
                sawPLTE = true
            case IDAT:
                // §11.2.3, §5.6
                guard idatState != 2 else { throw fail(.badOrder, "IDAT chunks must be consecutive") }
                guard colorType != 3 || sawPLTE else { throw fail(.badOrder, "colour type 3 requires PLTE before IDAT") }
                idatState = 1
                idatBytes += length
            case IEND:
                // §11.2.4
                guard length == 0 else { throw fail(.badChunk, "IEND must be empty") }
                guard idatState != 0 else { throw fail(.badOrder, "no IDAT chunk before IEND") }
                sawIEND = true
            case tRNS:
                // §11.3.2.1: after PLTE, before IDAT; length by colour type.
                guard idatState == 0 else { throw fail(.badOrder, "tRNS must precede IDAT") }
                switch colorType {
                case 0: guard length == 2 else { throw fail(.badChunk, "tRNS for grey must be 2 bytes") }
                case 2: guard length == 6 else { throw fail(.badChunk, "tRNS for RGB must be 6 bytes") }
                case 3:
                    guard sawPLTE else { throw fail(.badOrder, "tRNS must follow PLTE") }
                    guard length <= paletteEntries else { throw fail(.badChunk, "tRNS has more entries than PLTE") }
                default: throw fail(.badChunk, "tRNS is not allowed for colour type \(colorType)")
                }
            case cHRM, gAMA, iCCP, sBIT, sRGB, cICP:
                // §11.3.3: before PLTE and IDAT.
                guard !sawPLTE && idatState == 0 else { throw fail(.badOrder, "must precede PLTE and IDAT") }
                let expected: Int? = switch type {
                case cHRM: 32
                case gAMA: 4
                case sRGB: 1
                case cICP: 4
                case sBIT: [0: 1, 2: 3, 3: 3, 4: 2, 6: 4][colorType]
                default: nil
                }
                if let expected, length != expected { throw fail(.badChunk, "length must be \(expected), is \(length)") }
                if type == iCCP && length < 3 { throw fail(.badChunk, "too short for a profile name and method") }
            case bKGD, hIST:
                // §11.3.5.1, §11.3.5.2: after PLTE, before IDAT.
                guard idatState == 0 else { throw fail(.badOrder, "must precede IDAT") }
                if type == hIST {
                    guard sawPLTE, length == 2 * paletteEntries else { throw fail(.badChunk, "hIST needs PLTE and 2 bytes per entry") }
                } else {
                    let expected = colorType == 3 ? 1 : (colorType == 0 || colorType == 4 ? 2 : 6)
                    guard length == expected else { throw fail(.badChunk, "length must be \(expected), is \(length)") }
                    if colorType == 3 { guard sawPLTE else { throw fail(.badOrder, "bKGD must follow PLTE") } }
                }
            case pHYs, sPLT, acTL:
                // §11.3.5.3, §11.3.5.4 and APNG §acTL: before IDAT.
                guard idatState == 0 else { throw fail(.badOrder, "must precede IDAT") }
                if type == pHYs && length != 9 { throw fail(.badChunk, "length must be 9, is \(length)") }
                if type == acTL {
                    guard length == 8 else { throw fail(.badChunk, "length must be 8, is \(length)") }
                    let frames = input.be32(data)
                    guard frames >= 1 else { throw fail(.badChunk, "num_frames must be at least 1") }
                    frameCount = Int(frames)
                }
            case tIME:
                // §11.3.6.1
                guard length == 7 else { throw fail(.badChunk, "length must be 7, is \(length)") }
            default:
                // §5.4: a decoder that meets an unknown critical chunk must not display the image.
                if isCritical { throw fail(.unknownCritical, "unknown critical chunk") }
            }

            // §5.6 table 7: chunks that may appear at most once.
            switch type {
            case IHDR, PLTE, IEND, tRNS, cHRM, gAMA, iCCP, sBIT, sRGB, cICP, bKGD, hIST, pHYs, tIME, acTL, eXIf:
                guard seenOnce.insert(type).inserted else { throw fail(.badOrder, "may appear only once") }
            default: break
            }

            if !isCritical {
                guard length <= limits.maxAncillaryChunkBytes else {
                    throw fail(.limitExceeded, "\(length) bytes exceed the ancillary chunk limit of \(limits.maxAncillaryChunkBytes)")
                }
                metadataBytes += length
                guard metadataBytes <= limits.maxMetadataBytes else {
                    throw fail(.limitExceeded, "ancillary chunks total more than \(limits.maxMetadataBytes) bytes")
                }
            }
            pos += 12 + length
            if sawIEND { break }
        }
        guard sawIEND else {
            throw ImageValidationError(.truncated, at: n, "The PNG ends without an IEND chunk")
        }
        let trailing = try TrailingBytes.check(after: pos, in: input, limits: limits, marker: "the IEND chunk")

        // RFC 1951: each deflate length/distance pair emits at most 258 bytes from at least 2 bits, so
        // inflated size ≤ 1032 × compressed size. Fewer IDAT bytes than that cannot hold the image.
        let needed = rawImageBytes(width: width, height: height, depth: depth, colorType: colorType, interlaced: interlaced)
        if needed > idatBytes.multipliedReportingOverflow(by: 1032).partialValue + 1024 {
            throw ImageValidationError(
                .corruptData, at: 8, "IDAT holds \(idatBytes) bytes, too few to inflate to the \(needed) bytes a \(width)×\(height) image needs")
        }

        let components = [0: 1, 2: 3, 3: 1, 4: 2, 6: 4][colorType] ?? 1
        return ImageFacts(
            format: .png, width: width, height: height, bitDepth: depth, components: components,
            colorType: colorType, isInterlaced: interlaced, frameCount: frameCount, trailingBytes: trailing)
    }

    /// The filtered image's rows, pass by pass (one pass unless Adam7, §8.2; empty passes left out): each row is a
    /// filter-type byte and `bytes - 1` bytes of pixels (§7.2). Saturates instead of overflowing.
    static func scanlines(width: Int, height: Int, depth: Int, colorType: Int, interlaced: Bool) -> [(bytes: Int, rows: Int)] {
        let channels = [0: 1, 2: 3, 3: 1, 4: 2, 6: 4][colorType] ?? 1
        let bitsPerPixel = channels * depth
        func pass(_ w: Int, _ h: Int) -> (bytes: Int, rows: Int)? {
            guard w > 0 && h > 0 else { return nil }
            let (bits, overflow) = w.multipliedReportingOverflow(by: bitsPerPixel)
            return (overflow ? Int.max / 4 : 1 + (bits + 7) / 8, h)
        }
        guard interlaced else { return [pass(width, height)].compactMap { $0 } }
        // §8.2: Adam7 pass origins and steps.
        let passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
        return passes.compactMap { x0, y0, dx, dy in
            pass(width > x0 ? (width - x0 + dx - 1) / dx : 0, height > y0 ? (height - y0 + dy - 1) / dy : 0)
        }
    }

    /// Size of the filtered (pre-deflate) image data, §7.2 and §8.2 (Adam7 passes). Saturates instead of overflowing.
    static func rawImageBytes(width: Int, height: Int, depth: Int, colorType: Int, interlaced: Bool) -> Int {
        scanlines(width: width, height: height, depth: depth, colorType: colorType, interlaced: interlaced).reduce(0) { total, pass in
            let (bytes, overflow) = pass.bytes.multipliedReportingOverflow(by: pass.rows)
            return overflow ? Int.max / 2 : min(Int.max / 2, total + bytes)
        }
    }
}
