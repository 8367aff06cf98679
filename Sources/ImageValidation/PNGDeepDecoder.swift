import CSpng

/// Deep PNG check: the image data with zlib (`PNGZlibStream`), the chunks before it with libspng, which reports
/// errors by return code (never `longjmp`).
///
/// Runs only after `PNGStructure` accepted the file, so the dimensions and the pixel count are already within
/// `Limits`. Decisions:
/// - The image data is inflated once, by `PNGZlibStream`: the Adler-32, the stream's exact end and size, and every
///   scanline's filter type are all a decoder's row loop can find (pixel values carry no redundancy), and
///   unfiltering the rows would add cost and find nothing more. libspng's row decoding used to do this, and missed
///   the Adler-32 when it had every row before reading it (issue 15).
/// - libspng parses and checks the chunks before the image data (IHDR, PLTE, tRNS, iCCP, text chunks …), which
///   structure mode checks only for length and order. Chunks after the image data are checked by structure mode.
enum PNGDeepDecoder {
    static func decode(_ bytes: UnsafeRawBufferPointer, facts: ImageFacts, limits: ImageValidator.Limits) throws(ImageValidationError) {
        guard let ctx = spng_ctx_new(0) else {
            throw ImageValidationError(.corruptData, at: 0, "libspng could not allocate a decoder context")
        }
        defer { spng_ctx_free(ctx) }
        // CRC errors are fatal for critical and ancillary chunks (SPNG_CRC_ERROR is the default; set it anyway
        // because the contract depends on it).
        spng_set_crc_action(ctx, Int32(SPNG_CRC_ERROR.rawValue), Int32(SPNG_CRC_ERROR.rawValue))
        // libspng's own chunk cache limits: match ours so it never buffers more than structure mode allowed.
        spng_set_chunk_limits(ctx, max(limits.maxAncillaryChunkBytes, 1), max(limits.maxMetadataBytes, 1))
        spng_set_image_limits(ctx, UInt32(clamping: facts.width), UInt32(clamping: facts.height))
        try check(spng_set_png_buffer(ctx, bytes.baseAddress, bytes.count), "reading the PNG buffer")
        // Before the image is decoded, this reads and checks every chunk up to the first IDAT.
        try check(spng_decode_chunks(ctx), "reading the chunks before the image data")
        try PNGZlibStream.check(ByteInput(bytes), facts: facts)
    }

    static func check(_ status: Int32, _ step: String) throws(ImageValidationError) {
        if status != 0 { throw failure(status, step) }
    }

    static func failure(_ status: Int32, _ step: String) -> ImageValidationError {
        let message = String(cString: spng_strerror(status))
        return ImageValidationError(.corruptData, at: 0, "libspng failed while \(step): \(message) (spng error \(status))")
    }
}
