import Foundation

/// An image returned by `ImageLoader.load`: its bytes, what the validator learned from them,
/// and where they came from.
public struct LoadedImage: Sendable, Hashable {
    /// Where a loaded image came from (the same type as `StoredImage.Source`).
    public typealias Source = ImageSource

    /// The URL as passed to `load`.
    public var url: String
    /// The image bytes.
    public var data: Data
    /// The image's header facts (format, dimensions, …).
    public var facts: ImageFacts
    /// Where the bytes came from this time.
    public var source: Source
    /// When the entry expires in the store; nil when it never does or was not stored.
    public var expiresAt: Date?
    /// Whether the bytes are in the store now (false for a `no-store` response).
    public var isStored: Bool
    /// For `.stale`: the origin's failure that made the loader fall back to the stale entry.
    public var staleReason: ImageLoaderError?

    /// A loaded image as `ImageLoader` returns it; public so that tests can build one.
    public init(url: String, data: Data, facts: ImageFacts, source: Source, expiresAt: Date? = nil,
                isStored: Bool = true, staleReason: ImageLoaderError? = nil) {
        self.url = url
        self.data = data
        self.facts = facts
        self.source = source
        self.expiresAt = expiresAt
        self.isStored = isStored
        self.staleReason = staleReason
    }
}
