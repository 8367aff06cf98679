import CZlib

/// Deep PNG check of the image data's zlib stream, independent of the decoder.
///
/// PNG §10.1–§10.2 and RFC 1950 §2.2: the data of all IDAT chunks, concatenated, is one zlib stream: a 2-byte
/// header, deflate blocks, and the Adler-32 of the inflated bytes. libspng stops reading once it has the last
/// image row, so it may never read the Adler-32 (a flipped bit in the last block with the chunk CRC recomputed
/// decoded "fine") and it ignores bytes after the stream's end. This check inflates the stream with zlib, which
/// verifies the Adler-32, and requires:
///   1. the stream is well formed and its Adler-32 matches (zlib `Z_DATA_ERROR` otherwise),
///   2. it ends exactly at the end of the last IDAT's data: no bytes after it, in that chunk or a later IDAT,
///      and no IDAT ends before the stream does,
///   3. it inflates to exactly the filtered image size (§7.2, §8.2 for Adam7),
///   4. every scanline starts with a filter type 0…4 (§9.2).
/// Pixel values themselves carry no redundancy, so nothing else in the image data can be checked: this is
/// everything a decoder's row loop would find, at the cost of one inflate and no unfiltering.
/// Output goes to one scratch buffer and is discarded: memory is constant, CPU bounded by `Limits.maxPixels`.
enum PNGZlibStream {
    static func check(_ input: ByteInput, facts: ImageFacts) throws(ImageValidationError) {
        var stream = z_stream()
        guard inflateInit_(&stream, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw ImageValidationError(.corruptData, at: 0, "zlib could not allocate an inflate stream")
        }
        defer { inflateEnd(&stream) }
        let scratchBytes = 1 << 16
        let scratch = UnsafeMutablePointer<Bytef>.allocate(capacity: scratchBytes)
        defer { scratch.deallocate() }

        let expected = PNGStructure.rawImageBytes(
            width: facts.width, height: facts.height, depth: facts.bitDepth, colorType: facts.colorType ?? 0,
            interlaced: facts.isInterlaced)
        var rows = FilterBytes(PNGStructure.scanlines(
            width: facts.width, height: facts.height, depth: facts.bitDepth, colorType: facts.colorType ?? 0,
            interlaced: facts.isInterlaced))
        var inflated = 0
        var ended = false
        var pos = 8
        // Invariant: PNGStructure accepted the file, so every chunk header and length below lies inside the input.
        while pos + 12 <= input.count {
            let length = Int(input.be32(pos)), type = input.be32(pos + 4)
            let chunkStart = pos
            pos += 12 + length
            if type == PNGStructure.IEND { break }
            guard type == PNGStructure.IDAT, length > 0 else { continue }
            guard !ended else {
                throw ImageValidationError(.corruptData, at: chunkStart, "IDAT chunk at offset \(chunkStart) follows the end of the zlib stream")
            }
            stream.next_in = UnsafeMutablePointer(mutating: input.base.advanced(by: chunkStart + 8).assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(length)
            while stream.avail_in > 0 && !ended {
                stream.next_out = scratch
                stream.avail_out = uInt(scratchBytes)
                let status = inflate(&stream, Z_NO_FLUSH)
                let produced = scratchBytes - Int(stream.avail_out)
                if let bad = rows.firstBadFilterType(in: UnsafeBufferPointer(start: scratch, count: produced)) {
                    throw ImageValidationError(
                        .corruptData, at: chunkStart, "Scanline \(bad.row) starts with filter type \(bad.type); PNG defines 0…4")
                }
                inflated += produced
                switch status {
                case Z_OK: break
                case Z_STREAM_END: ended = true
                case Z_BUF_ERROR: break   // no progress possible without more input: the next IDAT brings it
                default:
                    let message = stream.msg.map { String(cString: $0) } ?? "error \(status)"
                    throw ImageValidationError(.corruptData, at: chunkStart, "The IDAT zlib stream is damaged: \(message)")
                }
                guard inflated <= expected else {
                    throw ImageValidationError(.corruptData, at: chunkStart, "The IDAT data inflates to more than the \(expected) bytes the image needs")
                }
            }
            if ended && stream.avail_in > 0 {
                throw ImageValidationError(
                    .corruptData, at: chunkStart,
                    "\(stream.avail_in) bytes follow the end of the zlib stream in the IDAT chunk at offset \(chunkStart)")
            }
        }
        guard ended else {
            throw ImageValidationError(.corruptData, at: 8, "The IDAT zlib stream ends before its final block and Adler-32")
        }
        guard inflated == expected else {
            throw ImageValidationError(.corruptData, at: 8, "The IDAT data inflates to \(inflated) bytes; the image needs \(expected)")
        }
    }
}

/// Walks the inflated bytes as scanlines, looking only at each row's first byte (§9.2: the filter type, 0…4).
struct FilterBytes {
    private var passes: [(bytes: Int, rows: Int)]
    private var pass = 0, rowInPass = 0, row = 0
    /// Bytes of the input until the next filter-type byte.
    private var skip = 0

    init(_ passes: [(bytes: Int, rows: Int)]) { self.passes = passes }

    /// The first bad filter type in the next chunk of inflated bytes, with its row number (counted over all passes).
    mutating func firstBadFilterType(in bytes: UnsafeBufferPointer<UInt8>) -> (row: Int, type: UInt8)? {
        var i = skip
        while i < bytes.count && pass < passes.count {
            let type = bytes[i]
            if type > 4 { return (row, type) }
            i += passes[pass].bytes
            row += 1
            rowInPass += 1
            if rowInPass == passes[pass].rows { pass += 1; rowInPass = 0 }
        }
        skip = max(0, i - bytes.count)
        return nil
    }
}
