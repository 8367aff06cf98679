import CDeflate
import CZlib

/// Deep PNG check of the image data's zlib stream, independent of the decoder.
///
/// PNG §10.1–§10.2 and RFC 1950 §2.2: the data of all IDAT chunks, concatenated, is one zlib stream: a 2-byte
/// header, deflate blocks, and the Adler-32 of the inflated bytes. libspng stops reading once it has the last
/// image row, so it may never read the Adler-32 (a flipped bit in the last block with the chunk CRC recomputed
/// decoded "fine") and it ignores bytes after the stream's end. This check inflates the stream, verifying the
/// Adler-32, and requires:
///   1. the stream is well formed and its Adler-32 matches,
///   2. it ends exactly at the end of the last IDAT's data: no bytes after it, in that chunk or a later IDAT,
///      and no IDAT ends before the stream does,
///   3. it inflates to exactly the filtered image size (§7.2, §8.2 for Adam7),
///   4. every scanline starts with a filter type 0…4 (§9.2).
/// Pixel values themselves carry no redundancy, so nothing else in the image data can be checked: this is
/// everything a decoder's row loop would find, at the cost of one inflate and no unfiltering.
///
/// Two inflaters, one verdict. Images whose filtered data fits `wholeBufferLimit` are inflated at once by
/// libdeflate into one buffer of exactly that size (about twice zlib's speed here, and most PNGs are this
/// small). Larger ones stream through zlib and a 64 KiB scratch buffer, so memory stays constant and CPU is
/// bounded by `Limits.maxPixels`. Both check conditions 1–4 with the same error kinds; the tests and the fuzz
/// target run both on the same inputs.
enum PNGZlibStream {
    /// Largest filtered image (bytes) inflated at once: 16 MiB, e.g. 2000×2000 RGBA (2048×2048 is just over).
    static let wholeBufferLimit = 16 << 20

    /// - Throws: `.corruptData` naming the first condition that fails.
    static func check(_ input: ByteInput, facts: ImageFacts, wholeBufferLimit: Int = wholeBufferLimit) throws(ImageValidationError) {
        let colorType = facts.colorType ?? 0
        let expected = PNGStructure.rawImageBytes(
            width: facts.width, height: facts.height, depth: facts.bitDepth, colorType: colorType,
            interlaced: facts.isInterlaced)
        var rows = FilterBytes(PNGStructure.scanlines(
            width: facts.width, height: facts.height, depth: facts.bitDepth, colorType: colorType,
            interlaced: facts.isInterlaced))
        let chunks = idatChunks(input)
        if expected <= wholeBufferLimit {
            try inflateAtOnce(input, chunks, expected: expected, rows: &rows)
        } else {
            try inflateStreaming(input, chunks, expected: expected, rows: &rows)
        }
    }

    /// The non-empty IDAT chunks: offset of the chunk and of its data, and the data's length.
    /// Invariant: PNGStructure accepted the file, so every chunk header and length lies inside the input.
    static func idatChunks(_ input: ByteInput) -> [(start: Int, data: Int, length: Int)] {
        var chunks: [(start: Int, data: Int, length: Int)] = []
        var pos = 8
        while pos + 12 <= input.count {
            let length = Int(input.be32(pos)), type = input.be32(pos + 4)
            if type == PNGStructure.IEND { break }
            if type == PNGStructure.IDAT && length > 0 { chunks.append((pos, pos + 8, length)) }
            pos += 12 + length
        }
        return chunks
    }

    static func damaged(at offset: Int, _ why: String) -> ImageValidationError {
        ImageValidationError(.corruptData, at: offset, why)
    }

    static func checkFilterTypes(_ rows: inout FilterBytes, _ bytes: UnsafeBufferPointer<UInt8>, chunk: Int) throws(ImageValidationError) {
        if let bad = rows.firstBadFilterType(in: bytes) {
            throw damaged(at: chunk, "Scanline \(bad.row) starts with filter type \(bad.type); PNG defines 0…4")
        }
    }

    static func tooLarge(_ expected: Int, chunk: Int) -> ImageValidationError {
        damaged(at: chunk, "The IDAT data inflates to more than the \(expected) bytes the image needs")
    }

    /// Condition 2 when the stream ended after `used` of the IDAT data's bytes (counted over the chunks in order).
    static func checkStreamEnd(used: Int, _ chunks: [(start: Int, data: Int, length: Int)]) throws(ImageValidationError) {
        var before = 0
        for chunk in chunks {
            if used < before + chunk.length {
                throw damaged(at: chunk.start, used > before
                    ? "\(before + chunk.length - used) bytes follow the end of the zlib stream in the IDAT chunk at offset \(chunk.start)"
                    : "IDAT chunk at offset \(chunk.start) follows the end of the zlib stream")
            }
            before += chunk.length
        }
    }

    static func checkSize(_ inflated: Int, expected: Int) throws(ImageValidationError) {
        guard inflated == expected else {
            throw damaged(at: 8, "The IDAT data inflates to \(inflated) bytes; the image needs \(expected)")
        }
    }

    /// libdeflate: the whole stream in one contiguous buffer (the chunks' data copied together when there are
    /// several) into an output buffer of exactly `expected` bytes.
    static func inflateAtOnce(
        _ input: ByteInput, _ chunks: [(start: Int, data: Int, length: Int)], expected: Int, rows: inout FilterBytes
    ) throws(ImageValidationError) {
        guard let decompressor = libdeflate_alloc_decompressor() else {
            throw damaged(at: 0, "libdeflate could not allocate a decompressor")
        }
        defer { libdeflate_free_decompressor(decompressor) }
        let total = chunks.reduce(0) { $0 + $1.length }
        var joined: UnsafeMutableRawBufferPointer? = nil
        defer { joined?.deallocate() }
        let source: UnsafeRawPointer
        if chunks.count == 1 {
            source = input.base + chunks[0].data
        } else {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 16)
            joined = buffer
            var at = 0
            for chunk in chunks {
                buffer.baseAddress!.advanced(by: at).copyMemory(from: input.base + chunk.data, byteCount: chunk.length)
                at += chunk.length
            }
            source = UnsafeRawPointer(buffer.baseAddress!)
        }
        let output = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(expected, 1))
        defer { output.deallocate() }
        let first = chunks.first?.start ?? 8
        var used = 0, inflated = 0
        let status = libdeflate_zlib_decompress_ex(decompressor, source, total, output.baseAddress, expected, &used, &inflated)
        switch status {
        case LIBDEFLATE_SUCCESS: break
        case LIBDEFLATE_INSUFFICIENT_SPACE: throw tooLarge(expected, chunk: first)
        default:
            // BAD_DATA covers every damaged or cut-short stream, a wrong Adler-32 included.
            throw damaged(at: first, "The IDAT zlib stream is damaged, cut short or fails its Adler-32 (libdeflate status \(status.rawValue))")
        }
        try checkFilterTypes(&rows, UnsafeBufferPointer(start: output.baseAddress, count: inflated), chunk: first)
        try checkStreamEnd(used: used, chunks)
        try checkSize(inflated, expected: expected)
    }

    /// zlib: chunk by chunk through a 64 KiB scratch buffer; memory does not grow with the image.
    static func inflateStreaming(
        _ input: ByteInput, _ chunks: [(start: Int, data: Int, length: Int)], expected: Int, rows: inout FilterBytes
    ) throws(ImageValidationError) {
        var stream = z_stream()
        guard inflateInit_(&stream, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw damaged(at: 0, "zlib could not allocate an inflate stream")
        }
        defer { inflateEnd(&stream) }
        let scratchBytes = 1 << 16
        let scratch = UnsafeMutablePointer<Bytef>.allocate(capacity: scratchBytes)
        defer { scratch.deallocate() }
        var inflated = 0, used = 0
        var ended = false
        for chunk in chunks where !ended {
            stream.next_in = UnsafeMutablePointer(mutating: input.base.advanced(by: chunk.data).assumingMemoryBound(to: Bytef.self))
            stream.avail_in = uInt(chunk.length)
            while stream.avail_in > 0 && !ended {
                stream.next_out = scratch
                stream.avail_out = uInt(scratchBytes)
                let status = inflate(&stream, Z_NO_FLUSH)
                let produced = scratchBytes - Int(stream.avail_out)
                try checkFilterTypes(&rows, UnsafeBufferPointer(start: scratch, count: produced), chunk: chunk.start)
                inflated += produced
                switch status {
                case Z_OK: break
                case Z_STREAM_END: ended = true
                case Z_BUF_ERROR: break   // no progress possible without more input: the next IDAT brings it
                default:
                    let message = stream.msg.map { String(cString: $0) } ?? "error \(status)"
                    throw damaged(at: chunk.start, "The IDAT zlib stream is damaged: \(message)")
                }
                guard inflated <= expected else { throw tooLarge(expected, chunk: chunk.start) }
            }
            used += chunk.length - Int(stream.avail_in)
        }
        guard ended else {
            throw damaged(at: 8, "The IDAT zlib stream ends before its final block and Adler-32")
        }
        try checkStreamEnd(used: used, chunks)
        try checkSize(inflated, expected: expected)
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
