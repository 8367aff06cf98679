/// Why bytes are not an acceptable image, and where the problem was found.
///
/// `kind` is an open set (new kinds may appear in later versions); match it with `==` or with
/// `case .truncated = error` style patterns through `~=`.
public struct ImageValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A class of problem. An open struct rather than an enum so new kinds do not break callers' `switch`es.
    public struct Kind: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The magic bytes match none of PNG, JPEG, GIF, WebP.
        public static let unknownFormat = Kind(rawValue: "unknownFormat")
        /// The file ends before a structure it has started (chunk, segment, scan, block) is complete,
        /// or before its end marker (IEND, EOI, GIF trailer).
        public static let truncated = Kind(rawValue: "truncated")
        /// A signature or magic number is damaged.
        public static let badSignature = Kind(rawValue: "badSignature")
        /// An image header (IHDR, SOF, logical screen descriptor, VP8/VP8L/VP8X header) holds an illegal value.
        public static let badHeader = Kind(rawValue: "badHeader")
        /// A chunk, marker segment or block is malformed (bad length, bad type, bad contents).
        public static let badChunk = Kind(rawValue: "badChunk")
        /// A PNG chunk's CRC-32 does not match its type and data.
        public static let badChecksum = Kind(rawValue: "badChecksum")
        /// Chunks or segments are in an order the specification forbids, repeated, or missing.
        public static let badOrder = Kind(rawValue: "badOrder")
        /// A critical PNG chunk, or a JPEG marker, the specification does not define.
        public static let unknownCritical = Kind(rawValue: "unknownCritical")
        /// Bytes follow the end marker (IEND, EOI, GIF trailer, the RIFF size) and the limits reject them.
        public static let trailingData = Kind(rawValue: "trailingData")
        /// A configured limit (pixels, ancillary chunk size, metadata total) is exceeded.
        public static let limitExceeded = Kind(rawValue: "limitExceeded")
        /// Entropy-coded or compressed data is damaged (found by the structure walk or the deep decoder).
        public static let corruptData = Kind(rawValue: "corruptData")
        /// Reserved; no longer thrown. Deep mode accepts JPEG variants TurboJPEG 2.1 cannot decode (12-bit,
        /// lossless, hierarchical) on their structure and says so in `ImageFacts.isDecodedByDeepMode`.
        public static let unsupportedByDecoder = Kind(rawValue: "unsupportedByDecoder")

        /// Pattern matching in `catch`: `catch ImageValidationError.Kind.truncated { … }`.
        public static func ~= (kind: Kind, error: any Error) -> Bool {
            (error as? ImageValidationError)?.kind == kind
        }
    }

    public var kind: Kind
    /// Byte offset in the input at which the problem was found (the start of the offending chunk or segment,
    /// or the input length for a truncation).
    public var offset: Int
    /// What is wrong, without the offset.
    public var reason: String

    public init(_ kind: Kind, at offset: Int, _ reason: String) {
        self.kind = kind
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "\(reason) (\(kind) at byte offset \(offset))" }

    /// True when the bytes are not an image format the validator knows, as opposed to a damaged PNG/JPEG/GIF/WebP.
    public var isUnknownFormat: Bool { kind == .unknownFormat }
}
