import Foundation

/// One image as the shared tier holds it: the bytes and what a host needs to serve them
/// without asking the origin.
///
/// Times are absolute: a host computes freshness from `expires`, so an entry never gains
/// life by passing through the tier.
public struct SharedEntry: Sendable, Equatable {
    /// The store's normalised URL (or cache key) the entry is for.
    public var url: String
    /// The image bytes.
    public var body: Data
    /// The image format as the store names it (`jpeg`, `png`, …).
    public var format: String
    /// Pixel dimensions.
    public var width: Int
    public var height: Int
    /// The origin's validators, for revalidation. Never the tier's own ETag.
    public var originETag: String?
    public var originLastModified: String?
    /// When the entry stops being fresh (absolute).
    public var expires: Date
    /// When the origin's answer was received.
    public var fetched: Date
    /// The tier's ETag of the object this entry was read from (for `If-Match`); nil for an
    /// entry that did not come from the tier.
    public var objectETag: String?

    /// An entry for `url`.
    public init(url: String, body: Data, format: String, width: Int, height: Int, originETag: String? = nil,
                originLastModified: String? = nil, expires: Date, fetched: Date, objectETag: String? = nil) {
        self.url = url
        self.body = body
        self.format = format
        self.width = width
        self.height = height
        self.originETag = originETag
        self.originLastModified = originLastModified
        self.expires = expires
        self.fetched = fetched
        self.objectETag = objectETag
    }

    /// Whether the entry is fresh at `now`.
    public func isFresh(at now: Date) -> Bool { now < expires }
}
