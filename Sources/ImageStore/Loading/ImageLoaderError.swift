import Foundation

/// Everything that can make `ImageLoader.load` fail. Each case carries the URL and the
/// context a user needs; its `description` is a sentence saying what happened and what to do.
///
/// A load that throws stores nothing: only whole, valid, 2xx bodies are ever put.
public enum ImageLoaderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The URL is not an absolute http or https URL.
    case invalidURL(url: String, reason: String)
    /// The origin could not be reached: connection refused or reset, host not found, no network.
    case unreachable(url: String, reason: String)
    /// The download took longer than `after`, the configured `downloadTimeout`.
    case timedOut(url: String, after: Duration)
    /// The origin answered with a status other than 2xx (or a 206, or an unexpected 304).
    case httpStatus(url: String, status: Int)
    /// The body is larger than the store's `maxEntryBytes`; the download was aborted as soon as
    /// that was known. `byteCount` is the announced or received size when known.
    case responseTooLarge(url: String, limit: Int, byteCount: Int?)
    /// The body's length does not match its `Content-Length` header (a truncated transfer).
    case lengthMismatch(url: String, expected: Int, received: Int)
    /// The origin answered 2xx with an empty body.
    case emptyBody(url: String)
    /// The body is not a whole, valid PNG, JPEG, GIF or WebP image; `reason` comes from the validator.
    case invalidImage(url: String, reason: String)
    /// The URL failed recently and is not retried until `until` (negative caching); `cause`
    /// is the failure being remembered.
    indirect case recentlyFailed(url: String, until: Date, cause: ImageLoaderError)
    /// The store failed to read or write the entry.
    case store(ImageStoreError)
    /// The transport failed in a way not covered above.
    case transport(url: String, reason: String)
    /// The calling task was cancelled. (The shared download goes on for other callers.)
    case cancelled

    /// Whether this failure says the origin cannot be used right now — it could not be
    /// reached, timed out, or failed on its side (5xx) — as opposed to the resource being
    /// missing or broken. Only such failures may fall back to a stale entry.
    public var isOriginFailure: Bool {
        switch self {
        case .unreachable, .timedOut: true
        case let .httpStatus(_, status): (500...599).contains(status)
        case let .recentlyFailed(_, _, cause): cause.isOriginFailure
        default: false
        }
    }

    /// Whether the failure is the origin's 5xx answer (as opposed to no answer at all).
    var isServerError: Bool {
        switch self {
        case let .httpStatus(_, status): (500...599).contains(status)
        case let .recentlyFailed(_, _, cause): cause.isServerError
        default: false
        }
    }

    public var description: String {
        switch self {
        case let .invalidURL(url, reason):
            "Cannot load \"\(url)\": \(reason). Pass an absolute http or https URL."
        case let .unreachable(url, reason):
            "The origin of \(url) could not be reached (\(reason)); check the network and the host."
        case let .timedOut(url, timeout):
            "Loading \(url) took longer than \(Self.seconds(timeout.seconds)) (ImageLoader.Configuration.downloadTimeout); the origin is slow or unreachable."
        case let .httpStatus(url, status):
            "The origin answered \(status) for \(url); nothing was stored."
        case let .responseTooLarge(url, limit, byteCount):
            "The response for \(url) is \(byteCount.map { "\($0) bytes" } ?? "larger than the limit"), over the limit of \(limit) bytes per entry (ImageStore.Configuration.maxEntryBytes); the download was aborted."
        case let .lengthMismatch(url, expected, received):
            "The response for \(url) was cut short or padded: Content-Length said \(expected) bytes, \(received) arrived; nothing was stored."
        case let .emptyBody(url):
            "The origin answered \(url) with an empty body; nothing was stored."
        case let .invalidImage(url, reason):
            "The response for \(url) is not a valid image: \(reason). It was not stored."
        case let .recentlyFailed(url, until, cause):
            "\(url) failed recently and is not retried before \(ISO8601DateFormatter().string(from: until)) (ImageLoader.Configuration.negativeCacheLifetime): \(cause.description)"
        case let .store(error):
            error.description
        case let .transport(url, reason):
            "Loading \(url) failed: \(reason)."
        case .cancelled:
            "The load was cancelled."
        }
    }

    private static func seconds(_ value: TimeInterval) -> String {
        value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    /// The old `timedOut`, its timeout in seconds.
    @available(*, deprecated, renamed: "timedOut(url:after:)", message: "use timedOut(url:after:), a Duration")
    public static func timedOut(url: String, seconds: TimeInterval) -> ImageLoaderError {
        .timedOut(url: url, after: Duration(exactlySeconds: seconds) ?? .zero)
    }
}
