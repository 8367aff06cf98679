import Foundation
import Synchronization

// The shared tier's part of a load: memory → local store → shared tier → origin.
extension ImageLoader {
    /// What a shared-tier lookup means for a load.
    enum SharedTierAnswer: Sendable {
        /// The load is over: a fresh shared entry, validated and stored locally (or the local
        /// store's failure to store it).
        case answer(Result<LoadedImage, ImageLoaderError>)
        /// An expired entry: revalidate it with the origin, using its validators.
        case expired(ExpiredSharedEntry)
        /// Nothing usable: go to the origin.
        case miss
    }

    /// An expired shared entry that passed validation, waiting for the origin's verdict.
    struct ExpiredSharedEntry: Sendable {
        var image: SharedTierImage
        var validated: ValidatedImage
    }

    /// Counters for the shared tier, read by `metrics`.
    final class SharedTierCounters: Sendable {
        let hits = Atomic<Int>(0)
        let misses = Atomic<Int>(0)
        let invalid = Atomic<Int>(0)
        let offers = Atomic<Int>(0)
        let refreshes = Atomic<Int>(0)
    }

    /// Asks the shared tier for `url`. Its bytes are validated by the store's rules before
    /// anything is stored: an entry that fails is a miss, never stored.
    func lookUpSharedTier(_ tier: any ImageLoaderSharedTier, url: String) async -> SharedTierAnswer {
        let counters = counters.sharedTier
        guard let shared = await tier.image(for: url), shared.url == url else {
            counters.misses.add(1, ordering: .relaxed)
            return .miss
        }
        let validated: ValidatedImage
        do { validated = try store.validate(shared.data, for: url) } catch {
            counters.invalid.add(1, ordering: .relaxed)
            counters.misses.add(1, ordering: .relaxed)
            return .miss
        }
        let now = store.configuration.clock()
        guard shared.isFresh(at: now) else { return .expired(ExpiredSharedEntry(image: shared, validated: validated)) }
        // The absolute expiry, as the tier carries it: never longer than this loader allows.
        let expiry = min(shared.expiresAt, now.addingTimeInterval(configuration.maxLifetime.seconds))
        do {
            let info = try await store.store(validated, for: url, expiry: .at(expiry), validators: shared.validators,
                                             durability: configuration.durability)
            counters.hits.add(1, ordering: .relaxed)
            return .answer(.success(LoadedImage(url: url, data: shared.data, facts: info.facts ?? validated.facts,
                                                source: .shared, expiresAt: info.expiresAt, isStored: true)))
        } catch {
            return .answer(.failure(Self.storeError(error)))
        }
    }

    /// A 304 for an expired shared entry: its bytes are current. They are stored locally with
    /// the origin's new lifetime, and the tier is told to rewrite the object's metadata.
    func revalidated(_ expired: ExpiredSharedEntry, url: String, headers: [String: String],
                     freshness: HTTPFreshness, now: Date) async -> Result<LoadedImage, ImageLoaderError> {
        counters.notModified.add(1, ordering: .relaxed)
        let validators = CacheValidators(
            etag: headers["etag"] ?? expired.image.validators.etag,
            lastModified: headers["last-modified"] ?? expired.image.validators.lastModified)
        let lifetime = freshness.isStorable ? freshness.lifetime : .zero
        let info: EntryInfo
        do {
            info = try await store.store(expired.validated, for: url, expiry: .after(lifetime),
                                         validators: validators, durability: configuration.durability)
        } catch {
            return .failure(Self.storeError(error))
        }
        if let tier = sharedTier, let expiresAt = info.expiresAt {
            var refreshed = expired.image
            refreshed.expiresAt = expiresAt
            refreshed.fetchedAt = now
            refreshed.validators = validators
            tier.refreshed(refreshed)
            counters.sharedTier.refreshes.add(1, ordering: .relaxed)
        }
        return .success(LoadedImage(url: url, data: expired.validated.data, facts: info.facts ?? expired.validated.facts,
                                    source: .revalidated, expiresAt: info.expiresAt, isStored: true))
    }

    /// Offers a stored origin download to the shared tier; returns at once (the tier queues it).
    func offerToSharedTier(_ image: ValidatedImage, info: EntryInfo, fetchedAt: Date, replacing version: String?) {
        guard let tier = sharedTier, let expiresAt = info.expiresAt else { return }
        let validators = info.validators
        tier.offer(SharedTierImage(url: info.url, data: image.data, format: image.facts.format, width: image.facts.width,
                                   height: image.facts.height, expiresAt: expiresAt, fetchedAt: fetchedAt,
                                   validators: validators, tierVersion: version))
        counters.sharedTier.offers.add(1, ordering: .relaxed)
    }
}
