import Foundation
import ImageStore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Sends requests over one `URLSession` with two deadlines of our own: one for the response
/// head, one for the whole exchange.
///
/// Why our own: `URLSession` on Linux has no connect timeout, and its request timeout counts
/// whole seconds, too coarse for a tier whose point is to fail in a fraction of one. A
/// watchdog task per request cancels the transfer at either deadline and the caller gets
/// `timedOut` at once, whatever libcurl is still doing.
final class HTTPExchange: Sendable {
    /// The session type of the loader's `URLSessionTransport` (no cache, no cookies, bodies cut at
    /// their limit); the deadlines are this type's own.
    private let session = HTTPSession()

    /// The answer to `request`: its head and whole body, whatever the status.
    /// - Parameters:
    ///   - headTimeout: time allowed until the response head arrives (nil: only `totalTimeout`).
    ///   - totalTimeout: time allowed for the whole exchange.
    ///   - bodyLimit: the largest answer body read; a larger one ends the exchange.
    /// - Throws: `timedOut`, `unreachable`, `responseTooLarge`, `cancelled`, `invalidResponse`.
    func send(_ request: URLRequest, operation: String, headTimeout: Duration?, totalTimeout: Duration,
              bodyLimit: Int) async throws(SharedTierError) -> (HTTPURLResponse, Data) {
        var request = request
        // A backstop only (whole seconds on Linux); the watchdog below is the real deadline.
        request.timeoutInterval = (totalTimeout.seconds + 1).rounded(.up)
        let transfer = session.transfer(request)
        let watchdog = Task {
            if let headTimeout, headTimeout < totalTimeout {
                try await Task.sleep(for: headTimeout)
                let timedOut = SharedTierError.timedOut(operation: operation, milliseconds: headTimeout.wholeMilliseconds)
                if transfer.stopIfNoHead(with: timedOut) { return }
                try await Task.sleep(for: totalTimeout - headTimeout)
            } else {
                try await Task.sleep(for: totalTimeout)
            }
            transfer.stop(with: SharedTierError.timedOut(operation: operation, milliseconds: totalTimeout.wholeMilliseconds))
        }
        defer { watchdog.cancel() }
        switch await transfer.run(bodyLimit: bodyLimit) {
        case let .success(answer): return answer
        case let .failure(failure): throw Self.map(failure, operation: operation)
        }
    }

    private static func map(_ failure: HTTPTransferFailure, operation: String) -> SharedTierError {
        switch failure {
        case let .tooLarge(limit, _):
            return .responseTooLarge(operation: operation, limit: limit)
        case let .stopped(reason):
            // A deadline stops with its `timedOut`; the caller's cancellation with CancellationError.
            return reason as? SharedTierError ?? .cancelled
        case .noResponse:
            return .invalidResponse(operation: operation, reason: "no HTTP response")
        case let .transport(error, _, _):
            guard let urlError = error as? URLError else {
                return .unreachable(operation: operation, reason: String(describing: error))
            }
            switch urlError.code {
            case .timedOut: return .timedOut(operation: operation, milliseconds: 0)
            case .cancelled: return .cancelled
            default: return .unreachable(operation: operation, reason: urlError.localizedDescription)
            }
        }
    }
}
