import Foundation
import Locking
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Why a transfer over an `HTTPSession` ended without a whole answer. Each client maps it to
/// its own errors: the loader's `URLSessionTransport` to `ImageLoaderError`, the shared tier's
/// S3 client to `SharedTierError`.
package enum HTTPTransferFailure: Error {
    /// The body passed `limit` bytes: announced so by its `Content-Length` (`announced`), or
    /// found while receiving it (`announced` nil). Nothing more is read.
    case tooLarge(limit: Int, announced: Int?)
    /// Ended by `HTTPSession.Transfer.stop(with:)` (a deadline, the caller's cancellation);
    /// `reason` is what the caller passed.
    case stopped(any Error)
    /// URLSession ended the task with `error`, after `response` (nil if its head never came)
    /// and `received` bytes of body.
    case transport(any Error, response: HTTPURLResponse?, received: Int)
    /// The task ended without an HTTP response.
    case noResponse
}

/// One `URLSession` (FoundationNetworking, libcurl, on Linux) that collects each request's
/// response head and whole body through its delegate: the one URLSession path of the loader's
/// `URLSessionTransport` and the shared tier's S3 client.
///
/// The session keeps no cookies and no HTTP cache of its own (the store is the cache) and never
/// turns a 304 into a 200: callers see the server's answers as they are. A body that passes its
/// limit is cancelled as soon as its `Content-Length` or its received bytes say so, so an
/// oversized body is never read whole.
package final class HTTPSession: Sendable {
    private let session: URLSession
    private let table: TransferTable

    /// A session built from `configuration` (default: ephemeral), whose cache, cookie storage and
    /// cache policy are overridden as described above.
    package init(configuration: URLSessionConfiguration = .ephemeral) {
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        table = TransferTable()
        session = URLSession(configuration: configuration, delegate: table, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    /// A transfer of `request`, not started yet: `run(bodyLimit:)` sends it. A caller with
    /// deadlines of its own holds the transfer to `stop(with:)` it from a watchdog.
    package func transfer(_ request: URLRequest) -> Transfer {
        Transfer(task: session.dataTask(with: request), table: table)
    }

    /// One request's exchange. Whoever ends it first (the delegate, `stop`, cancellation) resumes
    /// `run`, exactly once; later attempts find it gone and do nothing.
    package struct Transfer: Sendable {
        fileprivate let task: URLSessionDataTask
        fileprivate let table: TransferTable

        /// Sends the request and waits for its response head and whole body, whatever the status.
        /// Cancelling the calling task ends it at once with `.stopped(CancellationError())`.
        package func run(bodyLimit: Int) async -> Result<(HTTPURLResponse, Data), HTTPTransferFailure> {
            let id = task.taskIdentifier
            return await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    table.begin(id, limit: bodyLimit, continuation: continuation)
                    // Cancelled before it started: never resume the task (FoundationNetworking may not
                    // report a task cancelled while suspended), end the transfer here.
                    if Task.isCancelled {
                        table.end(id, with: { _ in .stopped(CancellationError()) })
                    } else {
                        task.resume()
                    }
                }
            } onCancel: {
                stop(with: CancellationError())
            }
        }

        /// Ends the transfer with `.stopped(reason)` and cancels its task, if it is still running.
        /// - Returns: true when it was running (this call ended it).
        @discardableResult
        package func stop(with reason: any Error) -> Bool {
            guard table.end(task.taskIdentifier, with: { _ in .stopped(reason) }) else { return false }
            task.cancel()
            return true
        }

        /// `stop(with:)`, but only while the response head has not arrived.
        package func stopIfNoHead(with reason: any Error) -> Bool {
            guard table.end(task.taskIdentifier, if: { $0.response == nil }, with: { _ in .stopped(reason) }) else {
                return false
            }
            task.cancel()
            return true
        }
    }
}

/// The session delegate: one running transfer per task identifier, with its continuation,
/// limit, response head and body so far.
private final class TransferTable: NSObject, URLSessionDataDelegate, Sendable {
    typealias Outcome = Result<(HTTPURLResponse, Data), HTTPTransferFailure>

    fileprivate struct Entry {
        var continuation: CheckedContinuation<Outcome, Never>
        var limit: Int
        var response: HTTPURLResponse?
        var data = Data()
    }

    // LockedValue (pthread), not Synchronization's Mutex: ThreadSanitizer does not see the futex
    // under Mutex on Linux and reported two `begin`s under the lock as a race.
    private let entries = LockedValue<[Int: Entry]>([:])

    func begin(_ id: Int, limit: Int, continuation: CheckedContinuation<Outcome, Never>) {
        entries.withLock { $0[id] = Entry(continuation: continuation, limit: limit) }
    }

    /// Removes the transfer if it is running and `condition` holds, and resumes it with
    /// `failure`. Removing is what entitles a caller to resume, so each is resumed once.
    /// - Returns: true when this call ended it.
    @discardableResult
    func end(_ id: Int, if condition: (Entry) -> Bool = { _ in true },
             with failure: (Entry) -> HTTPTransferFailure) -> Bool {
        let entry = entries.withLock { table -> Entry? in
            guard let entry = table[id], condition(entry) else { return nil }
            return table.removeValue(forKey: id)
        }
        guard let entry else { return false }
        entry.continuation.resume(returning: .failure(failure(entry)))
        return true
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping (URLSession.ResponseDisposition) -> Void) {
        let id = dataTask.taskIdentifier
        let announced = response.expectedContentLength
        entries.withLock { table in
            table[id]?.response = response as? HTTPURLResponse
            if let limit = table[id]?.limit, announced > 0, announced <= Int64(limit) {
                table[id]?.data.reserveCapacity(Int(announced))
            }
        }
        let tooLarge = end(id, if: { announced > Int64($0.limit) }, with: {
            .tooLarge(limit: $0.limit, announced: Int(announced))
        })
        completionHandler(tooLarge ? .cancel : .allow)
        // FoundationNetworking may keep reading after `.cancel`; cancelling the task stops it.
        if tooLarge { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let id = dataTask.taskIdentifier
        entries.withLock { $0[id]?.data.append(data) }
        if end(id, if: { $0.data.count > $0.limit }, with: { .tooLarge(limit: $0.limit, announced: nil) }) {
            dataTask.cancel()
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = entries.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            entry.continuation.resume(returning: .failure(.transport(error, response: entry.response, received: entry.data.count)))
        } else if let response = entry.response {
            entry.continuation.resume(returning: .success((response, entry.data)))
        } else {
            entry.continuation.resume(returning: .failure(.noResponse))
        }
    }
}
