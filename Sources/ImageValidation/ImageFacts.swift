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

    public init(
        format: ImageFormat, width: Int, height: Int, bitDepth: Int, components: Int,
        colorType: Int?, isInterlaced: Bool, frameCount: Int?
    ) {
        self.format = format
        self.width = width
        self.height = height
        self.bitDepth = bitDepth
        self.components = components
        self.colorType = colorType
        self.isInterlaced = isInterlaced
        self.frameCount = frameCount
    }
}
