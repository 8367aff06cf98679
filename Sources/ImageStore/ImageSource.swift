/// Where an image came from: the store's tiers (`StoredImage.source`: `.memory` or `.disk`)
/// and, for `ImageLoader`, the shared tier and the network. One type for both, so a loaded image's source needs no
/// mapping from the store's.
public enum ImageSource: String, Sendable, Hashable {
    /// The store's memory tier.
    case memory
    /// The store's durable tier (LMDB, or the write-ahead log before it is applied), fresh.
    case disk
    /// Downloaded now (and stored, unless the origin said `no-store`).
    case network
    /// From the fleet's shared tier (`ImageLoaderSharedTier`), fresh: validated and stored
    /// locally, without asking the origin.
    case shared
    /// The stored entry had expired; a conditional request got `304 Not Modified`, so the
    /// stored bytes were served and their expiry renewed.
    case revalidated
    /// The stored entry had expired and the origin failed (`LoadedImage.staleReason`); served
    /// anyway under `ImageLoader.Configuration.staleFallback`.
    case stale
}
