import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How `ImageLoader` talks to origins: one request in, one response head and body out. The
/// default is `URLSessionTransport`; tests and users may plug their own (a proxy, a mock, a
/// signed-request client).
///
/// Contract for implementations:
/// - Return every HTTP status as a response (a 404 or 500 is not an error here); redirects
///   may be followed.
/// - Stop reading and throw `ImageLoaderError.responseTooLarge` as soon as the body is known
///   to exceed `bodyLimit` bytes (from `Content-Length`, or while receiving), so an oversized
///   body is never read whole.
/// - Throw `ImageLoaderError.lengthMismatch` when the connection ends before
///   `Content-Length` bytes arrived.
/// - Stop promptly when the calling task is cancelled (throw anything; the loader reports
///   `cancelled` or `timedOut`).
/// - Other errors may be anything; `URLError`s are mapped to `unreachable`/`timedOut`.
public protocol ImageTransport: Sendable {
    /// Sends `request` and returns the response head and its whole body.
    func fetch(_ request: URLRequest, bodyLimit: Int) async throws -> (HTTPURLResponse, Data)
}
