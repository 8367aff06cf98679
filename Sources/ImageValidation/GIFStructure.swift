// GIF, after the GIF89a specification (CompuServe, 1990; section numbers below are its own). GIF87a files are
// the same structure without extension blocks.
//
//   file        = header(6) logical-screen-descriptor(7) [global colour table] block* trailer(3B)   §17, §18, §19, §27
//   image       = 2C descriptor(9) [local colour table] lzw-min-code-size(1) sub-block* 00          §20, §21, §22
//   extension   = 21 label(1) sub-block* 00                                                         §23–§26
//   sub-block   = size(1, 1…255) data(size); a size of 0 terminates                                 §15
//
// Every sub-block is walked to its terminator (this is the whole file, byte by byte at the block level) but the
// LZW data is not decoded: deep mode has no GIF decoder and returns these structure facts.

enum GIFStructure {
    static func validate(_ input: ByteInput, limits: ImageValidator.Limits) throws(ImageValidationError) -> ImageFacts {
        let n = input.count
        // §17 header ("GIF87a" / "GIF89a"), checked by sniff; §18 logical screen descriptor.
        guard n >= 13 else { throw ImageValidationError(.truncated, at: n, "The GIF ends inside its logical screen descriptor") }
        let width = input.le16(6), height = input.le16(8)
        guard width >= 1 && height >= 1 else {
            throw ImageValidationError(.badHeader, at: 6, "The GIF logical screen is \(width)×\(height); both must be at least 1")
        }
        guard width * height <= limits.maxPixels else {
            throw ImageValidationError(.limitExceeded, at: 6, "\(width)×\(height) pixels exceed the limit of \(limits.maxPixels)")
        }
        let packed = input.u8(10)
        var pos = 13
        // §18: bit 7 = global colour table flag; bits 0–2 = N, the table holds 2^(N+1) RGB triples (§19).
        if packed & 0x80 != 0 { pos += 3 << (Int(packed & 0x07) + 1) }
        var frames = 0
        var interlaced = false
        var metadataBytes = 0

        /// §15: data sub-blocks up to the zero-length terminator; returns the offset after it and the payload size.
        func skipSubBlocks(_ start: Int) throws(ImageValidationError) -> (end: Int, bytes: Int) {
            var p = start, bytes = 0
            while true {
                guard p < n else { throw ImageValidationError(.truncated, at: n, "The GIF ends inside a data sub-block") }
                let size = Int(input.u8(p))
                if size == 0 { return (p + 1, bytes) }
                p += 1 + size
                bytes += size
            }
        }

        while true {
            guard pos < n else { throw ImageValidationError(.truncated, at: n, "The GIF ends before its trailer (3B)") }
            let blockStart = pos
            switch input.u8(pos) {
            case 0x2C:
                // §20 image descriptor: left, top, width, height (LE16), packed.
                guard n - pos >= 10 else { throw ImageValidationError(.truncated, at: n, "The GIF ends inside an image descriptor") }
                let w = input.le16(pos + 5), h = input.le16(pos + 7)
                guard w >= 1 && h >= 1 else {
                    throw ImageValidationError(.badHeader, at: pos, "Image descriptor at offset \(pos) has size \(w)×\(h)")
                }
                let flags = input.u8(pos + 9)
                if flags & 0x40 != 0 { interlaced = true }   // §20: bit 6 = interlace flag
                pos += 10
                if flags & 0x80 != 0 { pos += 3 << (Int(flags & 0x07) + 1) }   // §21 local colour table
                // §22: LZW minimum code size. The spec's encoders use 2…8; decoders accept up to 11
                // (codes are at most 12 bits, Appendix F), so only values that cannot decode are rejected.
                guard pos < n else { throw ImageValidationError(.truncated, at: n, "The GIF ends before image data") }
                let minCodeSize = input.u8(pos)
                guard (1...11).contains(minCodeSize) else {
                    throw ImageValidationError(.badChunk, at: pos, "LZW minimum code size \(minCodeSize) at offset \(pos) is not 1…11")
                }
                let (end, bytes) = try skipSubBlocks(pos + 1)
                guard bytes > 0 else { throw ImageValidationError(.corruptData, at: blockStart, "Image at offset \(blockStart) has no data") }
                pos = end
                frames += 1
            case 0x21:
                // §23–§26 extensions: label then sub-blocks. Graphic control (F9) is part of the image;
                // others (comment FE, application FF, plain text 01, unknown) count as metadata.
                guard pos + 1 < n else { throw ImageValidationError(.truncated, at: n, "The GIF ends inside an extension") }
                let label = input.u8(pos + 1)
                let (end, bytes) = try skipSubBlocks(pos + 2)
                if label != 0xF9 {
                    metadataBytes += bytes
                    guard metadataBytes <= limits.maxMetadataBytes else {
                        throw ImageValidationError(.limitExceeded, at: blockStart, "GIF extension blocks total more than \(limits.maxMetadataBytes) bytes")
                    }
                }
                pos = end
            case 0x3B:
                // §27 trailer.
                guard frames > 0 else { throw ImageValidationError(.badOrder, at: pos, "The GIF has no image before its trailer") }
                let trailing = try TrailingBytes.check(after: pos + 1, in: input, limits: limits, marker: "the GIF trailer")
                return ImageFacts(
                    format: .gif, width: width, height: height, bitDepth: 8, components: 3, colorType: nil,
                    isInterlaced: interlaced, frameCount: frames, trailingBytes: trailing)
            default:
                throw ImageValidationError(.badChunk, at: pos, "Unknown GIF block introducer \(input.u8(pos)) at offset \(pos)")
            }
        }
    }
}
