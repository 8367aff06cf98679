import Foundation

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`) for header-signed requests.
///
/// The steps, as AWS documents them, each a value the tests compare with AWS's test suite:
/// 1. the canonical request: method, canonical URI, canonical query (names and values
///    encoded, sorted by name then value), canonical headers (lower-case names, values
///    trimmed with inner runs of spaces collapsed, sorted, one per line), the signed header
///    names, and the hex SHA-256 of the payload;
/// 2. the string to sign: the algorithm, the `x-amz-date` time, the scope
///    (`date/region/service/aws4_request`) and the hex SHA-256 of the canonical request;
/// 3. the signing key: HMAC-SHA-256 chained over `"AWS4" + secret`, date, region, service,
///    `aws4_request`; the signature is the hex HMAC of the string to sign under it.
///
/// The signer adds `x-amz-date` and, with temporary credentials, `x-amz-security-token` to
/// the headers it signs; the caller sends exactly the headers in `Signed.headers`.
package struct SigV4Signer: Sendable {
    package let credentials: S3Credentials
    package let region: String
    package let service: String

    package init(credentials: S3Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// A request as the signer sees it: `path` is the URI path already encoded as it will be
    /// sent; `query` holds raw (unencoded) names and values.
    package struct Request: Sendable {
        package var method: String
        package var path: String
        package var query: [(name: String, value: String)]
        package var headers: [(name: String, value: String)]
        package var payloadHash: String

        package init(method: String, path: String, query: [(name: String, value: String)] = [],
                     headers: [(name: String, value: String)], payloadHash: String) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payloadHash = payloadHash
        }
    }

    /// The result of signing, with every intermediate step (for tests and diagnostics; none of
    /// them reveals the secret).
    package struct Signed: Sendable {
        package var canonicalRequest: String
        package var stringToSign: String
        package var signature: String
        package var authorization: String
        /// The headers to send: the request's, plus `x-amz-date`, `x-amz-security-token`
        /// (temporary credentials) and `Authorization`.
        package var headers: [(name: String, value: String)]
    }

    /// The hex SHA-256 of an empty payload.
    package static let emptyPayloadHash = Digest.hex(Digest.sha256([UInt8]()))

    /// Signs `request` at `date`.
    package func sign(_ request: Request, at date: Date) -> Signed {
        let stamp = AMZDate(date)
        var headers = request.headers
        headers.append((name: "X-Amz-Date", value: stamp.dateTime))
        if let token = credentials.sessionToken {
            headers.append((name: "X-Amz-Security-Token", value: token))
        }
        let canonicalHeaders = Self.canonicalHeaders(headers)
        let signedHeaders = canonicalHeaders.map(\.name).joined(separator: ";")
        let canonicalRequest = [
            request.method,
            request.path.isEmpty ? "/" : request.path,
            Self.canonicalQuery(request.query),
            canonicalHeaders.map { "\($0.name):\($0.value)\n" }.joined(),
            signedHeaders,
            request.payloadHash,
        ].joined(separator: "\n")
        let scope = "\(stamp.date)/\(region)/\(service)/aws4_request"
        let stringToSign = [
            "AWS4-HMAC-SHA256", stamp.dateTime, scope, Digest.hex(Digest.sha256(Array(canonicalRequest.utf8))),
        ].joined(separator: "\n")
        let signature = Digest.hex(Digest.hmacSHA256(key: signingKey(date: stamp.date), Array(stringToSign.utf8)))
        let authorization = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), "
            + "SignedHeaders=\(signedHeaders), Signature=\(signature)"
        headers.append((name: "Authorization", value: authorization))
        return Signed(canonicalRequest: canonicalRequest, stringToSign: stringToSign, signature: signature,
                      authorization: authorization, headers: headers)
    }

    /// The query string as sent and as signed: encoded, sorted by encoded name, then value.
    package static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        query.map { (AWSPercentEncoding.encode($0.name), AWSPercentEncoding.encode($0.value)) }
            .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    private static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> [(name: String, value: String)] {
        var merged: [String: [String]] = [:]
        for header in headers {
            merged[header.name.lowercased(), default: []].append(trimmed(header.value))
        }
        return merged.keys.sorted().map { (name: $0, value: merged[$0]!.joined(separator: ",")) }
    }

    /// A header value trimmed, with each inner run of spaces collapsed to one.
    private static func trimmed(_ value: String) -> String {
        value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            .trimmingCharacters(in: .whitespaces)
    }

    private func signingKey(date: String) -> [UInt8] {
        var key = Array("AWS4\(credentials.secretAccessKey)".utf8)
        for part in [date, region, service, "aws4_request"] {
            key = Digest.hmacSHA256(key: key, Array(part.utf8))
        }
        return key
    }
}

/// The two spellings of a signing time: `yyyyMMdd` and `yyyyMMdd'T'HHmmss'Z'`, in UTC.
package struct AMZDate: Sendable {
    package let date: String
    package let dateTime: String

    package init(_ instant: Date) {
        var seconds = time_t(instant.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        date = "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))"
        dateTime = "\(date)T\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))Z"
    }
}
