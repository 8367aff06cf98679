#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Checks that bytes are a well-formed PNG, JPEG, GIF or WebP image and reports what they hold.
///
/// A value type with no state beyond its limits: safe to share between threads and to call concurrently.
/// Every check reads only bytes that are present; no allocation or loop is sized by a header before that
/// header's claim has been checked against the input length (or the configured limits).
public struct ImageValidator: Sendable {
    /// Bounds that protect the caller from hostile input.
    public struct Limits: Sendable, Hashable {
        /// Largest width × height accepted, in both modes (so a stored image can always be deep-verified).
        public var maxPixels: Int
        /// Largest single ancillary PNG chunk (tEXt, iCCP, eXIf, unknown ancillary …), in data bytes.
        public var maxAncillaryChunkBytes: Int
        /// Largest total of metadata bytes in one file: PNG ancillary chunks, JPEG APPn/COM segments,
        /// GIF extension blocks, WebP ICCP/EXIF/XMP chunks.
        public var maxMetadataBytes: Int
        /// Whether bytes after the end marker (IEND, EOI, GIF trailer, past the RIFF size) are accepted.
        /// Default true, counted in `ImageFacts.trailingBytes`: real origins serve such files (Android motion
        /// photos append an MP4, phones and editors append vendor trailers) and every decoder displays them.
        /// `false` is the strict policy: they are rejected as `.trailingData`, so no second payload can hide
        /// behind an image.
        public var allowTrailingBytes: Bool
        /// Largest number of JPEG scans (progressive files use ~10; thousands are a decoder DoS).
        public var maxJPEGScans: Int

        public init(
            maxPixels: Int = 100_000_000,
            maxAncillaryChunkBytes: Int = 8 << 20,
            maxMetadataBytes: Int = 32 << 20,
            allowTrailingBytes: Bool = true,
            maxJPEGScans: Int = 500
        ) {
            self.maxPixels = maxPixels
            self.maxAncillaryChunkBytes = maxAncillaryChunkBytes
            self.maxMetadataBytes = maxMetadataBytes
            self.allowTrailingBytes = allowTrailingBytes
            self.maxJPEGScans = maxJPEGScans
        }

        public static let `default` = Limits()
        /// The defaults with the strict trailing-data policy: bytes after the end marker are rejected.
        public static let strict = Limits(allowTrailingBytes: false)
    }

    public var limits: Limits

    public init(limits: Limits = .default) {
        self.limits = limits
    }

    /// Validates `bytes` and returns the image's facts.
    ///
    /// The buffer is only read during the call and never retained.
    /// - Throws: `ImageValidationError`; `isUnknownFormat` is true when the magic bytes match no known format.
    ///   Deep mode may also throw `.corruptData` (decoder errors and warnings). Images deep mode has no decoder
    ///   for are accepted on their structure (`ImageFacts.isDecodedByDeepMode` is false).
    public func validate(
        _ bytes: UnsafeRawBufferPointer, mode: ValidationMode = .structure
    ) throws(ImageValidationError) -> ImageFacts {
        let input = ByteInput(bytes)
        switch Self.sniff(bytes) {
        case .png:
            let facts = try PNGStructure.validate(input, limits: limits)
            if mode == .deep { try PNGDeepDecoder.decode(bytes, facts: facts, limits: limits) }
            return facts
        case .jpeg:
            let result = try JPEGStructure.validate(input, limits: limits)
            if mode == .deep { try JPEGDeepDecoder.decode(bytes, structure: result, limits: limits) }
            return result.facts
        case .gif:
            // Deep mode: no GIF decoder is linked; the structure walk already visits every LZW sub-block.
            return try GIFStructure.validate(input, limits: limits)
        case .webp:
            // Deep mode: no WebP decoder is linked; VP8/VP8L bitstreams are checked only to their headers.
            return try WebPStructure.validate(input, limits: limits)
        case .unknown:
            throw ImageValidationError(
                .unknownFormat, at: 0, "The first bytes match no known image signature (PNG, JPEG, GIF, WebP)")
        }
    }

    public func validate(_ bytes: [UInt8], mode: ValidationMode = .structure) throws(ImageValidationError) -> ImageFacts {
        // withUnsafeBytes rethrows untyped; carry the typed error out through a Result.
        let result: Result<ImageFacts, ImageValidationError> = bytes.withUnsafeBytes { buffer in
            Result { () throws(ImageValidationError) in try validate(buffer, mode: mode) }
        }
        return try result.get()
    }

    public func validate(_ data: Data, mode: ValidationMode = .structure) throws(ImageValidationError) -> ImageFacts {
        let result: Result<ImageFacts, ImageValidationError> = data.withUnsafeBytes { buffer in
            Result { () throws(ImageValidationError) in try validate(buffer, mode: mode) }
        }
        return try result.get()
    }

    /// The format named by the magic bytes alone; nothing else is checked.
    public static func sniff(_ bytes: [UInt8]) -> ImageFormat {
        bytes.withUnsafeBytes { sniff($0) }
    }

    /// The format named by the magic bytes alone; nothing else is checked.
    public static func sniff(_ data: Data) -> ImageFormat {
        data.withUnsafeBytes { sniff($0) }
    }

    /// The format named by the magic bytes alone; nothing else is checked.
    public static func sniff(_ bytes: UnsafeRawBufferPointer) -> ImageFormat {
        let n = bytes.count
        func at(_ i: Int) -> UInt8 { bytes[i] }
        // PNG spec §5.2: the 8-byte signature 89 50 4E 47 0D 0A 1A 0A. Sniffing accepts three of the first four
        // bytes, so a signature damaged in transit (7-bit path, CR/LF conversion) is reported as a damaged PNG
        // rather than as an unknown format; PNGStructure then checks all eight bytes.
        if n >= 4 {
            let matches = (at(0) == 0x89 ? 1 : 0) + (at(1) == 0x50 ? 1 : 0) + (at(2) == 0x4E ? 1 : 0)
                + (at(3) == 0x47 ? 1 : 0)
            if matches >= 3 { return .png }
        }
        // T.81 §B.1.1.3 / §B.2.1: a JPEG interchange stream starts with SOI (FF D8) followed by a marker (FF).
        if n >= 3, at(0) == 0xFF, at(1) == 0xD8, at(2) == 0xFF { return .jpeg }
        // GIF89a spec §17: "GIF" then version "87a" or "89a".
        if n >= 6, at(0) == 0x47, at(1) == 0x49, at(2) == 0x46, at(3) == 0x38,
           at(4) == 0x37 || at(4) == 0x39, at(5) == 0x61 { return .gif }
        // WebP container spec, "RIFF file format": "RIFF", 4-byte size, "WEBP".
        if n >= 12, at(0) == 0x52, at(1) == 0x49, at(2) == 0x46, at(3) == 0x46,
           at(8) == 0x57, at(9) == 0x45, at(10) == 0x42, at(11) == 0x50 { return .webp }
        return .unknown
    }
}

/// Read-only view of the input with unchecked big/little-endian loads.
/// Invariant: callers check `offset + width <= count` before every load (each parser does so right before).
struct ByteInput {
    let base: UnsafeRawPointer
    let count: Int

    init(_ buffer: UnsafeRawBufferPointer) {
        // An empty buffer may have a nil base; any non-nil pointer works because no byte will be loaded.
        self.base = buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!
        self.count = buffer.count
    }

    @inline(__always) func u8(_ i: Int) -> UInt8 {
        assert(i >= 0 && i < count)
        return base.load(fromByteOffset: i, as: UInt8.self)
    }
    @inline(__always) func be16(_ i: Int) -> Int { Int(u8(i)) << 8 | Int(u8(i + 1)) }
    @inline(__always) func be32(_ i: Int) -> UInt32 {
        UInt32(u8(i)) << 24 | UInt32(u8(i + 1)) << 16 | UInt32(u8(i + 2)) << 8 | UInt32(u8(i + 3))
    }
    @inline(__always) func le16(_ i: Int) -> Int { Int(u8(i)) | Int(u8(i + 1)) << 8 }
    @inline(__always) func le24(_ i: Int) -> Int { le16(i) | Int(u8(i + 2)) << 16 }
    @inline(__always) func le32(_ i: Int) -> UInt32 { UInt32(le16(i)) | UInt32(le16(i + 2)) << 16 }
}
