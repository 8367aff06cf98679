/// The container formats the validator recognises from their magic bytes.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable {
    case png, jpeg, gif, webp, unknown
}

/// How much work `ImageValidator.validate` does.
///
/// - `structure`: container and headers, each byte touched at most once (CRCs included); no pixel decoding.
/// - `deep`: `structure` first, then a full decode of the compressed data (libspng for PNG, TurboJPEG for JPEG).
///   GIF and WebP have no deep decoder here: deep mode returns their structure facts unchanged.
public enum ValidationMode: String, Sendable {
    case structure, deep
}

/// What the validator learned about a well-formed image.
public struct ImageFacts: Sendable, Hashable {
    public var format: ImageFormat
    public var width: Int
    public var height: Int
    /// PNG bit depth, JPEG sample precision, 8 for GIF and WebP.
    public var bitDepth: Int
    /// Channels: derived from the PNG colour type (palette = 1); the JPEG component count; 3 for GIF
    /// (palette entries are RGB); 3 or 4 for WebP (4 when the file declares alpha).
    public var components: Int
    /// The PNG colour type byte; nil for other formats.
    public var colorType: Int?
    /// PNG Adam7, JPEG progressive (SOF2/6/10/14), GIF interlaced (any frame).
    public var isInterlaced: Bool
    /// Frames: 1 for still images, acTL's count for APNG, image descriptors for GIF, ANMF chunks for WebP.
    public var frameCount: Int?
    /// Bytes after the end marker (PNG IEND, JPEG EOI, GIF trailer, the WebP RIFF size): an Android motion
    /// photo's MP4, a vendor trailer. Accepted and counted here by default; `Limits.allowTrailingBytes = false`
    /// (the store's `rejectTrailingBytes`) rejects them as `.trailingData` instead.
    public var trailingBytes: Int
    /// Whether deep mode decodes this image's compressed data: true for PNG and for 8-bit DCT JPEG (baseline,
    /// extended, progressive; any colour space). False for 12-bit, lossless and hierarchical JPEG, which
    /// TurboJPEG 2.1 cannot decode, and for GIF and WebP, which have no linked decoder: deep mode accepts those
    /// on their structure alone. The same in both modes, so deep and structure facts compare equal.
    public var isDecodedByDeepMode: Bool

    /// - Parameter isDecodedByDeepMode: nil derives it from the format and bit depth (PNG, or 8-bit JPEG), which
    ///   is right for every image except 8-bit lossless or hierarchical JPEG.
    public init(
        format: ImageFormat, width: Int, height: Int, bitDepth: Int, components: Int,
        colorType: Int?, isInterlaced: Bool, frameCount: Int?, trailingBytes: Int = 0,
        isDecodedByDeepMode: Bool? = nil
    ) {
        self.format = format
        self.width = width
        self.height = height
        self.bitDepth = bitDepth
        self.components = components
        self.colorType = colorType
        self.isInterlaced = isInterlaced
        self.frameCount = frameCount
        self.trailingBytes = trailingBytes
        self.isDecodedByDeepMode = isDecodedByDeepMode ?? (format == .png || (format == .jpeg && bitDepth == 8))
    }
}
