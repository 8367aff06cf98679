import CSpng

/// Deep PNG check: a full decode with libspng, which reports errors by return code (never `longjmp`).
///
/// Runs only after `PNGStructure` accepted the file, so the dimensions and the pixel count are already within
/// `Limits`. `PNGZlibStream` checks the zlib stream itself first (Adler-32, exact end, exact size), which
/// libspng does not fully do. Rows are decoded one at a time into a single row buffer (progressive decoding), so memory is one row,
/// not the image: a decompression bomb costs CPU bounded by `maxPixels`, never memory.
enum PNGDeepDecoder {
    static func decode(_ bytes: UnsafeRawBufferPointer, facts: ImageFacts, limits: ImageValidator.Limits) throws(ImageValidationError) {
        try PNGZlibStream.check(ByteInput(bytes), facts: facts)
        guard let ctx = spng_ctx_new(0) else {
            throw ImageValidationError(.corruptData, at: 0, "libspng could not allocate a decoder context")
        }
        defer { spng_ctx_free(ctx) }
        // CRC errors are fatal for critical and ancillary chunks (SPNG_CRC_ERROR is the default; set it anyway
        // because the contract depends on it). libspng's own Adler-32 check stays on (SPNG_CTX_IGNORE_ADLER32 is not set), though PNGZlibStream is what guarantees it.
        spng_set_crc_action(ctx, Int32(SPNG_CRC_ERROR.rawValue), Int32(SPNG_CRC_ERROR.rawValue))
        // libspng's own chunk cache limits: match ours so it never buffers more than structure mode allowed.
        spng_set_chunk_limits(ctx, max(limits.maxAncillaryChunkBytes, 1), max(limits.maxMetadataBytes, 1))
        spng_set_image_limits(ctx, UInt32(clamping: facts.width), UInt32(clamping: facts.height))
        try check(spng_set_png_buffer(ctx, bytes.baseAddress, bytes.count), "reading the PNG buffer")

        let format = Int32(SPNG_FMT_PNG.rawValue)
        var imageSize = 0
        try check(spng_decoded_image_size(ctx, format, &imageSize), "computing the decoded size")
        try check(spng_decode_image(ctx, nil, 0, format, Int32(SPNG_DECODE_PROGRESSIVE.rawValue)), "starting the decode")
        // Invariant: PNGStructure accepted height ≥ 1, and imageSize = height × row bytes.
        assert(facts.height >= 1 && imageSize % facts.height == 0)
        let rowBytes = imageSize / facts.height
        let row = UnsafeMutableRawBufferPointer.allocate(byteCount: max(rowBytes, 1), alignment: 16)
        defer { row.deallocate() }
        var status: Int32 = 0
        repeat {
            status = spng_decode_row(ctx, row.baseAddress, rowBytes)
        } while status == 0
        guard status == Int32(SPNG_EOI.rawValue) else { throw failure(status, "decoding image rows") }
        // Chunks after the image data (and IEND's CRC) are read only on request.
        try check(spng_decode_chunks(ctx), "reading the chunks after the image data")
    }

    static func check(_ status: Int32, _ step: String) throws(ImageValidationError) {
        if status != 0 { throw failure(status, step) }
    }

    static func failure(_ status: Int32, _ step: String) -> ImageValidationError {
        let message = String(cString: spng_strerror(status))
        return ImageValidationError(.corruptData, at: 0, "libspng failed while \(step): \(message) (spng error \(status))")
    }
}
