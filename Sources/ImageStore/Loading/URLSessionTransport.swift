import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default `ImageTransport`: `URLSession` (FoundationNetworking, libcurl, on Linux),
/// streaming each body through a delegate so an oversized one is cancelled as soon as its
/// `Content-Length` or its received bytes pass the limit.
///
/// The session keeps no cookies and no HTTP cache of its own (the store is the cache), and
/// never turns a 304 into a 200: the loader sees the origin's answers as they are.
public final class URLSessionTransport: ImageTransport {
    private let session: URLSession
    private let transfers: TransferTable

    /// A transport over a new session built from `configuration` (default: ephemeral). Its
    /// cache, cookie storage and cache policy are overridden as described above.
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        let configuration = configuration
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        transfers = TransferTable()
        session = URLSession(configuration: configuration, delegate: transfers, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    public func fetch(_ request: URLRequest, bodyLimit: Int) async throws -> (HTTPURLResponse, Data) {
        let task = session.dataTask(with: request)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                transfers.begin(task.taskIdentifier, limit: bodyLimit, url: request.url?.absoluteString ?? "",
                                continuation: continuation)
                // Cancelled before it started: never resume the task (FoundationNetworking may not
                // report a task cancelled while suspended), end the transfer here.
                if Task.isCancelled {
                    transfers.abandon(task.taskIdentifier)
                } else {
                    task.resume()
                }
            }
        } onCancel: {
            task.cancel()
        }
    }
}

/// The session delegate: one in-flight transfer per task identifier, each with its
/// continuation, response, bytes so far and limit.
private final class TransferTable: NSObject, URLSessionDataDelegate, Sendable {
    private struct Transfer {
        var continuation: CheckedContinuation<(HTTPURLResponse, Data), any Error>
        var limit: Int
        var url: String
        var response: HTTPURLResponse?
        var data = Data()
        /// Set when the transfer was cancelled for a reason of ours (too large).
        var failure: ImageLoaderError?
    }

    private let transfers = Mutex<[Int: Transfer]>([:])

    func begin(_ id: Int, limit: Int, url: String,
               continuation: CheckedContinuation<(HTTPURLResponse, Data), any Error>) {
        transfers.withLock { $0[id] = Transfer(continuation: continuation, limit: limit, url: url) }
    }

    /// Ends a transfer whose task was never resumed.
    func abandon(_ id: Int) {
        transfers.withLock { $0.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let proceed = transfers.withLock { table -> Bool in
            guard var transfer = table[dataTask.taskIdentifier] else { return false }
            transfer.response = response as? HTTPURLResponse
            let announced = response.expectedContentLength
            if announced > transfer.limit {
                transfer.failure = .responseTooLarge(url: transfer.url, limit: transfer.limit, byteCount: Int(announced))
            } else if announced > 0 {
                transfer.data.reserveCapacity(Int(announced))
            }
            table[dataTask.taskIdentifier] = transfer
            return transfer.failure == nil
        }
        completionHandler(proceed ? .allow : .cancel)
        // FoundationNetworking may keep reading after `.cancel`; cancelling the task stops it.
        if !proceed { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let tooLarge = transfers.withLock { table -> Bool in
            guard var transfer = table[dataTask.taskIdentifier], transfer.failure == nil else { return false }
            transfer.data.append(data)
            if transfer.data.count > transfer.limit {
                transfer.failure = .responseTooLarge(url: transfer.url, limit: transfer.limit, byteCount: nil)
                transfer.data = Data()
            }
            table[dataTask.taskIdentifier] = transfer
            return transfer.failure != nil
        }
        if tooLarge { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let transfer = transfers.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let failure = transfer.failure {
            transfer.continuation.resume(throwing: failure)
        } else if let error {
            // A connection closed before Content-Length bytes is libcurl's "partial file".
            if let response = transfer.response, response.expectedContentLength > transfer.data.count,
               (error as? URLError)?.code != .cancelled {
                transfer.continuation.resume(throwing: ImageLoaderError.lengthMismatch(
                    url: transfer.url, expected: Int(response.expectedContentLength), received: transfer.data.count))
            } else {
                transfer.continuation.resume(throwing: error)
            }
        } else if let response = transfer.response {
            transfer.continuation.resume(returning: (response, transfer.data))
        } else {
            transfer.continuation.resume(throwing: URLError(.badServerResponse))
        }
    }
}
