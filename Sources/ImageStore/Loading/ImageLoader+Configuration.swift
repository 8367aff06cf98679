import Foundation

extension ImageLoader {
    /// How an `ImageLoader` treats origins' caching headers and failures. Every value has a
    /// default suited to a service loading web images; the README lists them.
    public struct Configuration: Sendable {
        /// How long an image stays fresh when the response has no `Cache-Control` lifetime and
        /// no `Expires`: `.after` a duration, clamped to `minLifetime...maxLifetime` like any
        /// other lifetime. Default one day. (`.never`, `.at` and `.storeDefault` are refused as
        /// `invalidArgument` naming `defaultExpiry`.)
        public var defaultExpiry: Expiry = .after(.seconds(86_400)) { didSet { unrepresentable["defaultTTL"] = nil } }
        /// The shortest lifetime given to a stored image, whatever the origin says (`max-age=0`
        /// included), so a service does not revalidate an image on every request. Default 60 s.
        /// `Cache-Control: no-cache` is the exception: it is honoured as zero.
        public var minLifetime: Duration = .seconds(60) { didSet { unrepresentable["minTTL"] = nil } }
        /// The longest lifetime given to a stored image. Default 30 days.
        public var maxLifetime: Duration = .seconds(30 * 86_400) { didSet { unrepresentable["maxTTL"] = nil } }
        /// How long a failed URL is remembered and not requested again (negative caching);
        /// loads in that window fail with `recentlyFailed` (or get the stale entry, if the
        /// failure allows it). Default 10 s; zero turns negative caching off.
        public var negativeCacheLifetime: Duration = .seconds(10) { didSet { unrepresentable["negativeTTL"] = nil } }
        /// When an expired entry is served rather than an error. Default
        /// `.onUnreachableOrServerError`.
        public var staleFallback: StaleFallback = .onUnreachableOrServerError
        /// How long past its expiry an entry may still be served stale; nil for no limit
        /// (the default: an old image beats none).
        public var maxStaleness: Duration? { didSet { unrepresentable["maxStaleAge"] = nil } }
        /// Downloads running at once, across all URLs; more wait their turn. Default 8.
        public var maxConcurrentDownloads: Int = 8
        /// How long one download may take from sending the request to the last body byte
        /// (the wait for a download slot is not counted). Default 30 s.
        public var downloadTimeout: Duration = .seconds(30) { didSet { unrepresentable["timeout"] = nil } }
        /// Treat responses as a shared cache does (RFC 9111 §3.5, §5.2.2.10): `s-maxage` wins over
        /// `max-age`, and `private` responses are not stored. Default false: the store caches
        /// public images for one service, so `private` images are stored.
        public var isSharedCache = false
        /// Extra headers sent with every request (such as `User-Agent` or an API key).
        public var headers: [String: String] = ["Accept": "image/png,image/jpeg,image/gif,image/webp,image/*;q=0.8"]
        /// How durably downloads (and 304 renewals) are stored. Default `.batched` (synced within
        /// 100 ms, no fsync wait per download): the origin is the source of truth, so a download
        /// a power cut loses is simply fetched again. `.storeDefault` uses the store's.
        public var durability: Durability = .batched(within: Durability.defaultBatchWindow)

        /// Values given to the deprecated `TimeInterval` views that no `Duration` holds, by the
        /// view's name, so that validation still reports them (Configuration+TimeIntervals.swift).
        var unrepresentable: [String: TimeInterval] = [:]

        public init() {}
    }

    /// Which origin failures let `load` serve an expired entry, marked `.stale`. A 4xx,
    /// an invalid body or a size or length error is never one of them: those say the
    /// resource is gone or broken, not that the origin is away.
    public enum StaleFallback: Sendable, Hashable {
        /// Never serve an expired entry: an origin failure is an error.
        case never
        /// Serve it when the origin cannot be reached or times out.
        case onUnreachable
        /// Serve it when the origin cannot be reached, times out, or answers 5xx. The default.
        case onUnreachableOrServerError
    }

    /// What this loader did since it was created.
    public struct Statistics: Sendable, Hashable {
        /// Requests sent to origins (conditional ones included).
        public var requests: Int
        /// Requests answered `304 Not Modified`.
        public var notModified: Int
        /// Loads that joined a download another load had started.
        public var coalescedLoads: Int
        /// Loads answered from the negative cache without a request.
        public var negativeHits: Int
        /// Loads answered with a stale entry.
        public var staleServed: Int
        /// Body bytes received.
        public var bytesDownloaded: Int
        /// Loads answered by the shared tier (`LoadedImage.source == .shared`).
        public var sharedTierHits: Int = 0
    }
}
