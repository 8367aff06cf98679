import Locking

/// A snapshot of an `ImageLoader`'s counters: what `ImageLoader.metrics` returns. Cheap (no I/O),
/// never throws; `prometheusExposition()` renders it.
public struct LoaderMetrics: Sendable, Hashable {
    /// Requests sent to origins (conditional ones included).
    public var requests = 0
    /// Loads that shared a download another load had started.
    public var sharedDownloads = 0
    /// Requests answered `304 Not Modified`.
    public var notModified = 0
    /// Loads answered with a stale entry because the origin failed.
    public var staleServed = 0
    /// Loads answered from the negative cache, without a request.
    public var negativeCacheHits = 0
    /// Downloads that failed, by reason (`ImageLoaderError.metricReason`).
    public var failures: [String: Int] = [:]
    /// Body bytes received.
    public var bytesDownloaded = 0
    /// Loads answered by the shared tier (fresh, validated, stored locally) without the origin.
    public var sharedTierHits = 0
    /// Shared-tier lookups that gave nothing usable (absent, unreachable, corrupt, invalid).
    public var sharedTierMisses = 0
    /// Shared-tier entries refused by the validator (never stored locally).
    public var sharedTierInvalid = 0
    /// Origin downloads offered to the shared tier.
    public var sharedTierOffers = 0
    /// `304 Not Modified` answers that refreshed a shared-tier entry.
    public var sharedTierRefreshes = 0

    /// Empty metrics (every counter zero), for tests and fakes.
    public init() {}
}

extension ImageLoaderError {
    /// A short, stable name for the kind of failure: the case name, with the status class for
    /// `httpStatus` (`http_4xx`, `http_5xx`, `http_other`). Used as a metric label.
    public var metricReason: String {
        switch self {
        case .invalidURL: "invalid_url"
        case .unreachable: "unreachable"
        case .timedOut: "timed_out"
        case let .httpStatus(_, status):
            switch status {
            case 400...499: "http_4xx"
            case 500...599: "http_5xx"
            default: "http_other"
            }
        case .responseTooLarge: "response_too_large"
        case .lengthMismatch: "length_mismatch"
        case .emptyBody: "empty_body"
        case .invalidImage: "invalid_image"
        case .recentlyFailed: "recently_failed"
        case .store: "store"
        case .transport: "transport"
        case .cancelled: "cancelled"
        }
    }
}

/// Failed downloads by reason. A failure is rare next to a load, so one lock is enough.
final class LoaderFailureCounts: Sendable {
    private let counts = LockedValue<[String: Int]>([:])
    func count(_ error: ImageLoaderError) { counts.withLock { $0[error.metricReason, default: 0] += 1 } }
    var byReason: [String: Int] { counts.withLock { $0 } }
}
