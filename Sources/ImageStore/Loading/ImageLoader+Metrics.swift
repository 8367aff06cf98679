import Foundation

extension ImageLoader {
    /// What this loader did since it was created, read without I/O or waiting: for a scrape.
    /// Render it with `prometheusExposition()`, next to the store's `metrics`.
    public var metrics: LoaderMetrics {
        let statistics = statistics
        var metrics = LoaderMetrics()
        metrics.requests = statistics.requests
        metrics.sharedDownloads = statistics.coalescedLoads
        metrics.notModified = statistics.notModified
        metrics.staleServed = statistics.staleServed
        metrics.negativeCacheHits = statistics.negativeHits
        metrics.failures = counters.failures.byReason
        metrics.bytesDownloaded = statistics.bytesDownloaded
        let shared = counters.sharedTier
        metrics.sharedTierHits = shared.hits.load(ordering: .relaxed)
        metrics.sharedTierMisses = shared.misses.load(ordering: .relaxed)
        metrics.sharedTierInvalid = shared.invalid.load(ordering: .relaxed)
        metrics.sharedTierOffers = shared.offers.load(ordering: .relaxed)
        metrics.sharedTierRefreshes = shared.refreshes.load(ordering: .relaxed)
        return metrics
    }

    /// One prefetch: a failure is reported to the store's event handler (it is also
    /// negatively cached, and counted in `metrics.failures`); a cancellation is not a failure.
    func prefetchOne(_ url: String) async {
        if case let .failure(error) = await loadResult(url), error != .cancelled {
            store.report(.backgroundFailure(.prefetch, error: error))
        }
    }

    /// The store's normal form of `url`, so spellings of one URL share one download.
    /// - Throws: `invalidURL` with the store's reason (empty, malformed, too long).
    func normalized(_ url: String) throws(ImageLoaderError) -> String {
        do { return try store.normalizedURL(url) } catch {
            throw .invalidURL(url: URLNormalizer.excerpt(url), reason: error.description)
        }
    }
}
