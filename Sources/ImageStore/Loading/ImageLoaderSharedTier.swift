import Foundation

/// A tier shared by a fleet of hosts, which `ImageLoader` asks between its own store and the
/// origin: memory → local store → shared tier → origin.
///
/// The `SharedTier` module's `SharedTier` (S3-compatible object storage) conforms; a test can
/// conform an in-memory type. ImageStore itself knows nothing of S3: this protocol is the whole
/// contract.
///
/// Contract:
/// - **Failure is a miss.** `image(for:)` never throws and returns within the tier's own timeouts:
///   a tier that is down, slow, refusing or corrupt answers nil, and the loader goes to the
///   origin. The tier counts why.
/// - **Never on the caller's path.** `offer` and `refreshed` return at once; the tier writes in
///   the background, best effort (a bounded queue; dropping an offer is allowed).
/// - **Absolute times.** `SharedTierImage.expiresAt` is absolute: the loader computes freshness
///   from it with the store's clock, so an entry never gains life by passing through the tier.
///
/// Thread safety: every method may be called from any task at once.
public protocol ImageLoaderSharedTier: Sendable {
    /// The entry the tier holds for `url` (the store's normalised URL), fresh or expired; nil
    /// when it holds none or cannot be reached. The bytes are checked by the tier (length,
    /// checksum) and validated again by the loader before they are stored.
    func image(for url: String) async -> SharedTierImage?

    /// Hands the tier an image the loader downloaded from the origin. Returns at once.
    /// `image.tierVersion` is the version of the tier's object the download replaces (the
    /// expired entry that was revalidated and changed), nil for a new entry.
    func offer(_ image: SharedTierImage)

    /// Tells the tier that the origin confirmed the entry it returned (a `304 Not Modified`):
    /// `image` carries the new expiry and validators and the `tierVersion` that was read, so
    /// the tier can rewrite the object's metadata in place. Returns at once.
    func refreshed(_ image: SharedTierImage)
}

/// One image as it passes between `ImageLoader` and an `ImageLoaderSharedTier`.
public struct SharedTierImage: Sendable, Hashable {
    /// The store's normalised URL.
    public var url: String
    /// The image bytes.
    public var data: Data
    /// The format and dimensions (from the validator when the loader offers it; as the tier's
    /// metadata says on a lookup (`image(for:)`), which the loader does not trust: it validates the bytes).
    public var format: ImageFormat
    public var width: Int
    public var height: Int
    /// When the entry stops being fresh: absolute, never a lifetime.
    public var expiresAt: Date
    /// When the origin's answer was received.
    public var fetchedAt: Date
    /// The ORIGIN's `ETag` and `Last-Modified` (for revalidation). Never the tier's own ETag.
    public var validators: CacheValidators
    /// The tier's own version of the object this image was read from (an S3 ETag), opaque to
    /// the loader, which hands it back in `offer` and `refreshed`; nil when not read from the tier.
    public var tierVersion: String?

    /// An image for `url`; every field as described on its property.
    public init(url: String, data: Data, format: ImageFormat, width: Int, height: Int, expiresAt: Date,
                fetchedAt: Date, validators: CacheValidators = CacheValidators(), tierVersion: String? = nil) {
        self.url = url
        self.data = data
        self.format = format
        self.width = width
        self.height = height
        self.expiresAt = expiresAt
        self.fetchedAt = fetchedAt
        self.validators = validators
        self.tierVersion = tierVersion
    }

    /// Whether the image is fresh at `now`.
    public func isFresh(at now: Date) -> Bool { now < expiresAt }
}
