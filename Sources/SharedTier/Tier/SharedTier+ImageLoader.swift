import Foundation
import ImageStore

/// The bridge to `ImageLoader`: `ImageLoader(store:sharedTier:)` asks the tier between the
/// store and the origin, offers it what it downloads and tells it about 304s.
///
/// ```swift
/// let tier = try SharedTier(configuration: .init(s3: S3Configuration(bucketURL: "http://127.0.0.1:8333/imgstore")))
/// let loader = try ImageLoader(store: store, sharedTier: tier)
/// ```
extension SharedTier: ImageLoaderSharedTier {
    /// `lookup(url)` as the loader takes it: the entry (fresh or expired), or nil for any miss
    /// (absent, skipped by the breaker, failed, corrupt), which `statistics` counts by kind.
    public func image(for url: String) async -> SharedTierImage? {
        guard case let .hit(entry) = await lookup(url) else { return nil }
        return SharedTierImage(
            url: entry.url, data: entry.body, format: ImageFormat(rawValue: entry.format) ?? .unknown,
            width: entry.width, height: entry.height, expiresAt: entry.expires, fetchedAt: entry.fetched,
            validators: CacheValidators(etag: entry.originETag, lastModified: entry.originLastModified),
            tierVersion: entry.objectETag)
    }

    /// Queues the upload of an origin download (`enqueueUpload`): created with
    /// `If-None-Match: *`, or replacing `image.tierVersion` with `If-Match`. Returns at once.
    public func offer(_ image: SharedTierImage) {
        enqueueUpload(Self.entry(image), replacing: image.tierVersion)
    }

    /// Queues the copy-in-place of the object's metadata after a 304 (`enqueueRefresh`),
    /// guarded by `x-amz-copy-source-if-match` on `image.tierVersion`. Returns at once.
    public func refreshed(_ image: SharedTierImage) {
        enqueueRefresh(Self.entry(image))
    }

    static func entry(_ image: SharedTierImage) -> SharedEntry {
        SharedEntry(url: image.url, body: image.data, format: image.format.rawValue, width: image.width,
                    height: image.height, originETag: image.validators.etag,
                    originLastModified: image.validators.lastModified, expires: image.expiresAt,
                    fetched: image.fetchedAt, objectETag: image.tierVersion)
    }
}
