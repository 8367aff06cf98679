import CTurboJPEG

/// Deep JPEG check: a full entropy decode with TurboJPEG, which reports errors by return code (its own
/// `setjmp` never unwinds through Swift frames).
///
/// Decisions:
/// - Warnings are failures: `TJFLAG_STOPONWARNING` turns libjpeg's "Premature end of data" and "Corrupt JPEG data"
///   warnings into errors, and any status with `tjGetErrorCode == TJERR_WARNING` is still reported as corrupt.
/// - `TJFLAG_LIMITSCANS` makes libjpeg-turbo refuse more than 500 progressive scans (a known CPU DoS).
/// - The image is decompressed at 1/8 scale: every Huffman/arithmetic symbol of every block is still decoded
///   (that is where corruption shows), only the inverse DCT is reduced, so memory is 1/64 of the image.
/// - The pixel format is one the image's colour space converts to: libjpeg converts greyscale, YCbCr and RGB
///   to grey (the cheapest), but CMYK and YCCK (Adobe transform 0 and 2: ImageMagick's and Pillow's CMYK output)
///   only to CMYK, so those decode as `TJPF_CMYK`. Asking for grey fails them with "Unsupported color
///   conversion request", which is not damage.
/// - TurboJPEG 2.1 decodes 8-bit lossy JPEG only. 12-bit (e.g. monkey12.jpg), lossless and hierarchical
///   files are accepted on their structure, here and therefore everywhere deep mode runs (`validate --deep`,
///   `verify --deep`, `rejectInvalidDeep`): one rule, and `ImageFacts.isDecodedByDeepMode` is false for them.
enum JPEGDeepDecoder {
    static func decode(_ bytes: UnsafeRawBufferPointer, structure: JPEGStructureResult, limits: ImageValidator.Limits) throws(ImageValidationError) {
        let facts = structure.facts
        // Invariant: JPEGStructure sets the flag exactly for the 8-bit, non-lossless, non-hierarchical frames.
        assert(facts.isDecodedByDeepMode == (facts.bitDepth == 8 && !structure.isLossless && !structure.isHierarchical))
        guard facts.isDecodedByDeepMode else { return }
        guard let handle = tjInitDecompress() else {
            throw ImageValidationError(.corruptData, at: 0, "TurboJPEG could not allocate a decompressor")
        }
        defer { tjDestroy(handle) }
        let jpeg = bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let size = UInt(bytes.count)
        var width: Int32 = 0, height: Int32 = 0, subsamp: Int32 = 0, colorspace: Int32 = 0
        if tjDecompressHeader3(handle, jpeg, size, &width, &height, &subsamp, &colorspace) != 0 {
            throw failure(handle, "reading the header")
        }
        // Invariant: the structure walk and libjpeg agree on the frame size (DNL files aside, where libjpeg
        // may report 0 until it has decoded).
        guard Int(width) == facts.width else {
            throw ImageValidationError(.corruptData, at: 0, "TurboJPEG reads width \(width), the frame header says \(facts.width)")
        }
        // 1/8 scale: ceil(dimension / 8).
        let scaledWidth = (Int(width) + 7) / 8, scaledHeight = (max(Int(height), facts.height) + 7) / 8
        // The colour conversion is irrelevant to corruption: the cheapest one the colour space allows.
        let fourChannel = colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue)
        let pixelFormat = fourChannel ? TJPF_CMYK : TJPF_GRAY
        let pitch = scaledWidth * (fourChannel ? 4 : 1)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(pitch * scaledHeight, 1), alignment: 16)
        defer { buffer.deallocate() }
        let flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS | TJFLAG_FASTDCT
        let status = tjDecompress2(
            handle, jpeg, size, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self),
            Int32(scaledWidth), Int32(pitch), Int32(scaledHeight), Int32(pixelFormat.rawValue), flags)
        if status != 0 {
            throw failure(handle, "decoding")
        }
    }

    static func failure(_ handle: tjhandle, _ step: String) -> ImageValidationError {
        let message = String(cString: tjGetErrorStr2(handle))
        let warning = tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue)
        return ImageValidationError(
            .corruptData, at: 0,
            "TurboJPEG \(warning ? "warned" : "failed") while \(step): \(message)\(warning ? " (warnings count as corruption)" : "")")
    }
}
