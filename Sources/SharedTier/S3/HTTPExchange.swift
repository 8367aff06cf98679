import Foundation
import Locking
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
    private let session: URLSession
    private let transfers: Transfers

    init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        transfers = Transfers()
        session = URLSession(configuration: configuration, delegate: transfers, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    /// The answer to `request`: its head and whole body, whatever the status.
    /// - Parameters:
    ///   - headTimeout: time allowed until the response head arrives (nil: only `totalTimeout`).
    ///   - totalTimeout: time allowed for the whole exchange.
    ///   - bodyLimit: the largest answer body read; a larger one ends the exchange.
    /// - Throws: `timedOut`, `unreachable`, `responseTooLarge`, `cancelled`.
    func send(_ request: URLRequest, operation: String, headTimeout: Duration?, totalTimeout: Duration,
              bodyLimit: Int) async throws(SharedTierError) -> (HTTPURLResponse, Data) {
        var request = request
        // A backstop only (whole seconds on Linux); the watchdog below is the real deadline.
        request.timeoutInterval = (totalTimeout.seconds + 1).rounded(.up)
        let task = session.dataTask(with: request)
        let id = task.taskIdentifier
        let transfers = transfers
        let watchdog = Task {
            if let headTimeout, headTimeout < totalTimeout {
                try await Task.sleep(for: headTimeout)
                if transfers.failIfNoHead(id, with: .timedOut(operation: operation, milliseconds: headTimeout.wholeMilliseconds)) {
                    task.cancel()
                    return
                }
                try await Task.sleep(for: totalTimeout - headTimeout)
            } else {
                try await Task.sleep(for: totalTimeout)
            }
            if transfers.fail(id, with: .timedOut(operation: operation, milliseconds: totalTimeout.wholeMilliseconds)) {
                task.cancel()
            }
        }
        defer { watchdog.cancel() }
        let result: Result<(HTTPURLResponse, Data), SharedTierError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                transfers.begin(id, operation: operation, limit: bodyLimit, continuation: continuation)
                if Task.isCancelled {
                    _ = transfers.fail(id, with: .cancelled)
                } else {
                    task.resume()
                }
            }
        } onCancel: {
            if transfers.fail(id, with: .cancelled) { task.cancel() }
        }
        return try result.get()
    }
}

/// The session delegate: one in-flight exchange per task identifier. Whoever removes an
/// exchange from the table resumes its continuation, so it is resumed exactly once.
private final class Transfers: NSObject, URLSessionDataDelegate, Sendable {
    typealias Outcome = Result<(HTTPURLResponse, Data), SharedTierError>

    private struct Exchange {
        var continuation: CheckedContinuation<Outcome, Never>
        var operation: String
        var limit: Int
        var response: HTTPURLResponse?
        var data = Data()
    }

    private let table = LockedValue<[Int: Exchange]>([:])

    func begin(_ id: Int, operation: String, limit: Int, continuation: CheckedContinuation<Outcome, Never>) {
        table.withLock { $0[id] = Exchange(continuation: continuation, operation: operation, limit: limit) }
    }

    /// Ends the exchange with `responseTooLarge` when `size` bytes pass its limit.
    private func failIfTooLarge(_ id: Int, size: (Exchange) -> Int64) -> Bool {
        let exchange = table.withLock { table -> Exchange? in
            guard let exchange = table[id], size(exchange) > Int64(exchange.limit) else { return nil }
            return table.removeValue(forKey: id)
        }
        guard let exchange else { return false }
        exchange.continuation.resume(returning: .failure(.responseTooLarge(operation: exchange.operation, limit: exchange.limit)))
        return true
    }

    /// Ends the exchange with `error` if it is still running; true when it was.
    func fail(_ id: Int, with error: SharedTierError) -> Bool {
        guard let exchange = table.withLock({ $0.removeValue(forKey: id) }) else { return false }
        exchange.continuation.resume(returning: .failure(error))
        return true
    }

    /// Ends the exchange with `error` if its response head has not arrived yet.
    func failIfNoHead(_ id: Int, with error: SharedTierError) -> Bool {
        let exchange = table.withLock { table -> Exchange? in
            guard let exchange = table[id], exchange.response == nil else { return nil }
            return table.removeValue(forKey: id)
        }
        exchange?.continuation.resume(returning: .failure(error))
        return exchange != nil
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        table.withLock { $0[dataTask.taskIdentifier]?.response = response as? HTTPURLResponse }
        let announced = response.expectedContentLength
        let tooLarge = failIfTooLarge(dataTask.taskIdentifier) { _ in announced }
        completionHandler(tooLarge ? .cancel : .allow)
        // FoundationNetworking may keep reading after `.cancel`; cancelling the task stops it.
        if tooLarge { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        table.withLock { $0[dataTask.taskIdentifier]?.data.append(data) }
        if failIfTooLarge(dataTask.taskIdentifier, size: { Int64($0.data.count) }) { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = table.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            exchange.continuation.resume(returning: .failure(Self.map(error, operation: exchange.operation)))
        } else if let response = exchange.response {
            exchange.continuation.resume(returning: .success((response, exchange.data)))
        } else {
            exchange.continuation.resume(returning: .failure(
                .invalidResponse(operation: exchange.operation, reason: "no HTTP response")))
        }
    }

    private static func map(_ error: any Error, operation: String) -> SharedTierError {
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
