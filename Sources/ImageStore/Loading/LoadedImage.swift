import Foundation

/// An image returned by `ImageLoader.load`: its bytes, what the validator learned from them,
/// and where they came from.
public struct LoadedImage: Sendable, Hashable {
    /// Where a loaded image came from.
    public enum Source: String, Sendable, Hashable {
        /// The store's memory tier. (Reported once the store says which tier answered; until
        /// then every store hit is `.disk`.)
        case memory
        /// The store, fresh.
        case disk
        /// Downloaded now (and stored, unless the origin said `no-store`).
        case network
        /// The stored entry had expired; a conditional request got `304 Not Modified`, so the
        /// stored bytes were served and their expiry renewed.
        case revalidated
        /// The stored entry had expired and the origin failed (`staleReason`); served anyway
        /// under `ImageLoader.Configuration.staleFallback`.
        case stale
    }

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
}
