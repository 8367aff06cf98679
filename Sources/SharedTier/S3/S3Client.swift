import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small S3 client: GET, HEAD, conditional PUT, metadata replace by copy-in-place, and
/// `ListObjectsV2`, each signed with SigV4 and bounded by the configuration's timeouts.
///
/// - Integrity: every PUT sends `Content-MD5` (the server rejects bytes damaged on the way)
///   and records the body's SHA-256 in `x-amz-meta-sha256`; every GET checks the length
///   against `Content-Length` and the bytes against that checksum, and throws
///   `corruptBody` rather than return bytes that differ.
/// - A missing object is `nil`; a lost race is `S3WriteOutcome.preconditionFailed`.
///
/// Thread safety: every method may be called from any task at once; they share one
/// `URLSession` (and its connections).
public final class S3Client: Sendable {
    /// The metadata name of the body checksum (`x-amz-meta-sha256`).
    public static let checksumMetadataName = "sha256"

    /// The configuration, fixed at creation.
    public let configuration: S3Configuration
    private let signer: SigV4Signer
    private let http = HTTPExchange()
    private let now: @Sendable () -> Date

    /// A client for `configuration`'s bucket. `now` is the signing clock (default: the wall
    /// clock; the server rejects a signature more than 15 minutes off its own).
    /// - Throws: `invalidConfiguration` naming the bad field.
    public init(configuration: S3Configuration, now: @escaping @Sendable () -> Date = { Date() }) throws(SharedTierError) {
        try configuration.validate()
        self.configuration = configuration
        self.now = now
        signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region)
    }

    // MARK: - Reading

    /// The object at `key`, or nil when there is none.
    /// - Throws: `corruptBody` (length or checksum differ), `unknownBucket`, `badCredentials`,
    ///   `timedOut`, `unreachable`, `serverError`, `unexpectedStatus`, `cancelled`.
    public func get(_ key: String) async throws(SharedTierError) -> S3Object? {
        let (response, body) = try await send("GET", key: key, operation: "GET \(key)")
        if response.statusCode == 404, try notFound(response, body, operation: "GET \(key)") { return nil }
        try expectSuccess(response, body, operation: "GET \(key)")
        let head = Self.head(of: response, key: key)
        guard let announced = response.value(forHTTPHeaderField: "Content-Length").flatMap(Int.init) else {
            throw .corruptBody(key: key, reason: "the answer has no Content-Length")
        }
        guard body.count == announced else {
            throw .corruptBody(key: key, reason: "\(body.count) bytes arrived of the \(announced) announced")
        }
        guard let expected = head.bodySHA256 else {
            throw .corruptBody(key: key, reason: "its metadata carries no \(Self.checksumMetadataName) checksum")
        }
        let actual = Digest.hex(Digest.sha256(body))
        guard actual == expected else {
            throw .corruptBody(key: key, reason: "the body's SHA-256 is \(actual), its metadata says \(expected)")
        }
        return S3Object(head: head, body: body)
    }

    /// The head of the object at `key`, or nil when there is none. (A HEAD answer has no
    /// body, so a missing bucket is also nil here; `get` and `list` tell it apart.)
    /// - Throws: `badCredentials`, `timedOut`, `unreachable`, `serverError`,
    ///   `unexpectedStatus`, `cancelled`.
    public func head(_ key: String) async throws(SharedTierError) -> S3ObjectHead? {
        let (response, body) = try await send("HEAD", key: key, operation: "HEAD \(key)")
        if response.statusCode == 404 { return nil }
        try expectSuccess(response, body, operation: "HEAD \(key)")
        return Self.head(of: response, key: key)
    }

    /// One page of the keys under `prefix`, in key order (`ListObjectsV2`).
    /// - Throws: `unknownBucket`, `badCredentials`, `invalidResponse`, `timedOut`,
    ///   `unreachable`, `serverError`, `unexpectedStatus`, `cancelled`.
    public func list(prefix: String, continuationToken: String? = nil, maxKeys: Int = 1000) async throws(SharedTierError) -> S3ListPage {
        var query = [(name: "list-type", value: "2"), (name: "prefix", value: prefix), (name: "max-keys", value: String(maxKeys))]
        if let continuationToken { query.append((name: "continuation-token", value: continuationToken)) }
        let operation = "ListObjectsV2 \(prefix)"
        let (response, body) = try await send("GET", key: nil, query: query, operation: operation)
        try expectSuccess(response, body, operation: operation)
        let xml = try S3XML.parse(body, operation: operation)
        guard xml.root == "ListBucketResult" else {
            throw .invalidResponse(operation: operation, reason: "the answer is <\(xml.root ?? "")>, not <ListBucketResult>")
        }
        var objects: [S3ListedObject] = []
        for record in xml.records {
            guard let key = record["Key"], let size = record["Size"].flatMap(Int.init) else {
                throw .invalidResponse(operation: operation, reason: "a <Contents> without a Key or a Size")
            }
            objects.append(S3ListedObject(key: key, size: size, etag: record["ETag"] ?? ""))
        }
        let truncated = xml.top["IsTruncated"] == "true"
        let next = truncated ? xml.top["NextContinuationToken"] : nil
        if truncated, next == nil {
            throw .invalidResponse(operation: operation, reason: "a truncated listing without a NextContinuationToken")
        }
        return S3ListPage(objects: objects, nextContinuationToken: next)
    }

    // MARK: - Writing

    /// Stores `body` at `key` with `metadata` (names without `x-amz-meta-`, lower-case ASCII;
    /// values ASCII), if `condition` holds. The client adds `sha256` to the metadata.
    /// - Throws: `badCredentials`, `unknownBucket`, `timedOut`, `unreachable`, `serverError`,
    ///   `unexpectedStatus` (400 `BadDigest`: the bytes were damaged on the way), `cancelled`.
    public func put(_ key: String, body: Data, metadata: [String: String], contentType: String,
                    condition: S3WriteCondition) async throws(SharedTierError) -> S3WriteOutcome {
        try await put(key, body: body, metadata: metadata, contentType: contentType, condition: condition,
                      recordedSHA256: Digest.hex(Digest.sha256(body)))
    }

    /// `put` recording `recordedSHA256` as the body's checksum: the tests' way to store an
    /// object whose bytes differ from its checksum, as damage underneath would leave it.
    package func put(_ key: String, body: Data, metadata: [String: String], contentType: String,
                     condition: S3WriteCondition, recordedSHA256: String) async throws(SharedTierError) -> S3WriteOutcome {
        var headers = Self.metadataHeaders(metadata, bodySHA256: recordedSHA256)
        headers.append((name: "Content-Type", value: contentType))
        headers.append((name: "Content-MD5", value: Data(Digest.md5(body)).base64EncodedString()))
        switch condition {
        case .unconditional: break
        case .create: headers.append((name: "If-None-Match", value: "*"))
        case let .replace(etag): headers.append((name: "If-Match", value: etag))
        }
        let operation = "PUT \(key)"
        let (response, answer) = try await send("PUT", key: key, headers: headers, body: body, operation: operation)
        return try writeOutcome(response, answer, operation: operation)
    }

    /// Replaces the metadata of the object at `key` without sending its bytes again: a copy
    /// onto itself with `x-amz-metadata-directive: REPLACE`, if the object is still the
    /// version `ifMatch` names (nil: whatever is there). `bodySHA256` is the body's checksum
    /// as read (`S3ObjectHead.bodySHA256`): a replace drops every old metadata value.
    /// - Throws: as `put`; `unexpectedStatus` (404) when the object is gone.
    public func replaceMetadata(_ key: String, metadata: [String: String], bodySHA256: String, contentType: String,
                                ifMatch: String?) async throws(SharedTierError) -> S3WriteOutcome {
        var headers = Self.metadataHeaders(metadata, bodySHA256: bodySHA256)
        headers.append((name: "Content-Type", value: contentType))
        headers.append((name: "x-amz-copy-source", value: "/\(configuration.bucket)/\(AWSPercentEncoding.encodePath(key))"))
        headers.append((name: "x-amz-metadata-directive", value: "REPLACE"))
        if let ifMatch { headers.append((name: "x-amz-copy-source-if-match", value: ifMatch)) }
        let operation = "copy-in-place \(key)"
        let (response, answer) = try await send("PUT", key: key, headers: headers, body: nil, operation: operation)
        let outcome = try writeOutcome(response, answer, operation: operation)
        // A copy answers 200 with <CopyObjectResult>, or (on AWS) 200 with an <Error> inside.
        if case .stored = outcome, !answer.isEmpty {
            let xml = try S3XML.parse(answer, operation: operation)
            if xml.root == "Error" { try fail(500, xml, operation: operation) }
            if let etag = xml.top["ETag"] { return .stored(etag: etag) }
        }
        return outcome
    }

    // MARK: - Requests

    private func send(_ method: String, key: String?, query: [(name: String, value: String)] = [],
                      headers: [(name: String, value: String)] = [], body: Data? = nil,
                      operation: String) async throws(SharedTierError) -> (HTTPURLResponse, Data) {
        let endpoint = configuration.endpoint
        var host = endpoint.host!
        var path = ""
        if configuration.pathStyle {
            path = "/\(AWSPercentEncoding.encodePath(configuration.bucket))"
        } else {
            host = "\(configuration.bucket).\(host)"
        }
        path += key.map { "/\(AWSPercentEncoding.encodePath($0))" } ?? (configuration.pathStyle ? "" : "/")
        let authority = endpoint.port.map { "\(host):\($0)" } ?? host
        let queryString = SigV4Signer.canonicalQuery(query)
        let urlString = "\(endpoint.scheme!)://\(authority)\(path)" + (queryString.isEmpty ? "" : "?\(queryString)")
        guard let url = URL(string: urlString) else {
            throw .invalidConfiguration(reason: "cannot form a URL from \(urlString)")
        }
        let payloadHash = body.map { Digest.hex(Digest.sha256($0)) } ?? SigV4Signer.emptyPayloadHash
        var signedHeaders = headers
        signedHeaders.append((name: "Host", value: authority))
        signedHeaders.append((name: "x-amz-content-sha256", value: payloadHash))
        let signed = signer.sign(SigV4Signer.Request(method: method, path: path, query: query,
                                                     headers: signedHeaders, payloadHash: payloadHash), at: now())
        var request = URLRequest(url: url)
        request.httpMethod = method
        for header in signed.headers where header.name != "Host" {
            request.setValue(header.value, forHTTPHeaderField: header.name)
        }
        request.httpBody = body
        let headTimeout = body == nil ? configuration.connectTimeout : nil
        return try await http.send(request, operation: operation, headTimeout: headTimeout,
                                   totalTimeout: configuration.requestTimeout, bodyLimit: configuration.maxResponseBytes)
    }

    /// True when a 404 means "no such key"; throws `unknownBucket` when it means the bucket.
    private func notFound(_ response: HTTPURLResponse, _ body: Data, operation: String) throws(SharedTierError) -> Bool {
        // A 404 body that does not parse is still a 404: only a readable NoSuchBucket changes it.
        if Self.errorDocument(body, operation: operation).top["Code"] == "NoSuchBucket" { throw .unknownBucket(bucket: configuration.bucket) }
        return true
    }

    private func writeOutcome(_ response: HTTPURLResponse, _ body: Data, operation: String) throws(SharedTierError) -> S3WriteOutcome {
        // Only 412 means another host won. AWS's 409 ConditionalRequestConflict means a
        // conflicting write was in flight and says to retry: it is an error, not a lost race.
        if response.statusCode == 412 { return .preconditionFailed }
        try expectSuccess(response, body, operation: operation)
        return .stored(etag: response.value(forHTTPHeaderField: "ETag") ?? "")
    }

    private func expectSuccess(_ response: HTTPURLResponse, _ body: Data, operation: String) throws(SharedTierError) {
        guard !(200..<300).contains(response.statusCode) else { return }
        try fail(response.statusCode, Self.errorDocument(body, operation: operation), operation: operation)
    }

    /// The fields of an S3 error document. A body that is not one (a proxy's HTML page, a cut
    /// body) still leaves the status to decide the error, and the error's message says what was
    /// wrong with the body, so nothing the server sent is dropped silently.
    private static func errorDocument(_ body: Data, operation: String) -> S3XML {
        guard !body.isEmpty else { return S3XML() }
        do {
            return try S3XML.parse(body, operation: operation)
        } catch {
            return S3XML(top: ["Message": "the error body is not S3 XML (\(error))"])
        }
    }

    private func fail(_ status: Int, _ xml: S3XML, operation: String) throws(SharedTierError) -> Never {
        let code = xml.top["Code"] ?? ""
        let message = xml.top["Message"] ?? ""
        if code == "NoSuchBucket" { throw .unknownBucket(bucket: configuration.bucket) }
        if status == 403 || Self.credentialCodes.contains(code) {
            throw .badCredentials(code: code.isEmpty ? "HTTP 403" : code, message: message.isEmpty ? "access denied" : message)
        }
        if status >= 500 { throw .serverError(status: status, code: code, message: message) }
        throw .unexpectedStatus(operation: operation, status: status, code: code, message: message)
    }

    private static let credentialCodes: Set<String> = [
        "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "InvalidToken", "ExpiredToken",
    ]

    private static func metadataHeaders(_ metadata: [String: String], bodySHA256: String) -> [(name: String, value: String)] {
        var all = metadata
        all[checksumMetadataName] = bodySHA256
        return all.sorted { $0.key < $1.key }.map { (name: "x-amz-meta-\($0.key)", value: $0.value) }
    }

    private static func head(of response: HTTPURLResponse, key: String) -> S3ObjectHead {
        var metadata: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            guard let name = (name as? String)?.lowercased(), name.hasPrefix("x-amz-meta-"), let value = value as? String else { continue }
            metadata[String(name.dropFirst("x-amz-meta-".count))] = value
        }
        return S3ObjectHead(
            key: key, etag: response.value(forHTTPHeaderField: "ETag") ?? "",
            contentLength: response.value(forHTTPHeaderField: "Content-Length").flatMap(Int.init) ?? 0,
            contentType: response.value(forHTTPHeaderField: "Content-Type"), metadata: metadata)
    }
}
