import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default `ImageTransport`: `URLSession` (FoundationNetworking, libcurl, on Linux) through
/// `HTTPSession`, which streams each body through its delegate so an oversized one is cancelled
/// as soon as its `Content-Length` or its received bytes pass the limit.
///
/// The session keeps no cookies and no HTTP cache of its own (the store is the cache), and
/// never turns a 304 into a 200: the loader sees the origin's answers as they are.
public final class URLSessionTransport: ImageTransport {
    private let session: HTTPSession

    /// A transport over a new session built from `configuration` (default: ephemeral). Its
    /// cache, cookie storage and cache policy are overridden as described above.
    public init(configuration: URLSessionConfiguration = .ephemeral) {
        session = HTTPSession(configuration: configuration)
    }

    public func fetch(_ request: URLRequest, bodyLimit: Int) async throws -> (HTTPURLResponse, Data) {
        let url = request.url?.absoluteString ?? ""
        switch await session.transfer(request).run(bodyLimit: bodyLimit) {
        case let .success(answer):
            return answer
        case let .failure(.tooLarge(limit, announced)):
            throw ImageLoaderError.responseTooLarge(url: url, limit: limit, byteCount: announced)
        case let .failure(.stopped(reason)):
            throw reason
        case let .failure(.transport(error, response, received)):
            // A connection closed before Content-Length bytes is libcurl's "partial file".
            if let response, response.expectedContentLength > received, (error as? URLError)?.code != .cancelled {
                throw ImageLoaderError.lengthMismatch(url: url, expected: Int(response.expectedContentLength), received: received)
            }
            throw error
        case .failure(.noResponse):
            throw URLError(.badServerResponse)
        }
    }
}
