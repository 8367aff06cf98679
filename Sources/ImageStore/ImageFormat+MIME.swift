extension ImageFormat {
    /// The media type for a `Content-Type` header (`image/png`, …); `application/octet-stream`
    /// for `.unknown` (bytes stored unvalidated, or in a format the validator does not know).
    public var mimeType: String {
        switch self {
        case .png: "image/png"
        case .jpeg: "image/jpeg"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .unknown: "application/octet-stream"
        }
    }
}
