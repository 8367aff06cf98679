import Foundation
import Testing
@testable import SharedTier

/// The signer against AWS's published SigV4 test suite (see Fixtures/sigv4/README.md for the
/// source): each case's canonical request, string to sign and signature, compared separately
/// so a failure names the step that went wrong.
@Suite struct SigV4VectorTests {
    static let cases = [
        "get-vanilla", "get-vanilla-query-order-key-case", "get-vanilla-query-unreserved", "get-header-value-trim",
        "get-utf8", "get-vanilla-with-session-token", "post-x-www-form-urlencoded",
    ]

    @Test(arguments: cases)
    func signsLikeTheAWSTestSuite(_ name: String) throws {
        let vector = try SigV4Vector(name)
        let signed = vector.signer.sign(vector.request, at: vector.date)
        #expect(signed.canonicalRequest == vector.canonicalRequest)
        #expect(signed.stringToSign == vector.stringToSign)
        #expect(signed.signature == vector.signature)
        #expect(signed.authorization.hasSuffix("Signature=\(vector.signature)"))
        #expect(signed.authorization.hasPrefix("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "))
    }

    /// AWS's worked S3 example (GET /test.txt with a Range header, the documentation's
    /// "examplebucket" keys): the signing key chain with service `s3`.
    @Test func signsAWSsS3GetObjectExample() {
        let signer = SigV4Signer(
            credentials: S3Credentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                                       secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            region: "us-east-1")
        let request = SigV4Signer.Request(
            method: "GET", path: "/test.txt",
            headers: [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
                      ("x-amz-content-sha256", SigV4Signer.emptyPayloadHash)],
            payloadHash: SigV4Signer.emptyPayloadHash)
        let signed = signer.sign(request, at: Date(timeIntervalSince1970: 1_369_353_600))  // 2013-05-24T00:00:00Z
        #expect(signed.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    }

    @Test func canonicalQueryIsEncodedAndSortedByNameThenValue() {
        let query = SigV4Signer.canonicalQuery([
            ("prefix", "images/a b+c"), ("list-type", "2"), ("continuation-token", "x/y=z"), ("b", "2"), ("b", "1"),
        ])
        #expect(query == "b=1&b=2&continuation-token=x%2Fy%3Dz&list-type=2&prefix=images%2Fa%20b%2Bc")
    }
}

/// One test-suite case read from its files.
struct SigV4Vector {
    var signer: SigV4Signer
    var request: SigV4Signer.Request
    var date: Date
    var canonicalRequest: String
    var stringToSign: String
    var signature: String

    init(_ name: String) throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/sigv4/\(name)")
        func read(_ file: String) throws -> String {
            try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
        }
        struct Context: Decodable {
            struct Credentials: Decodable { var access_key_id: String; var secret_access_key: String; var token: String? }
            var credentials: Credentials
            var region: String
            var service: String
            var sign_body: Bool
            var timestamp: String
        }
        let context = try JSONDecoder().decode(Context.self, from: Data(try read("context.json").utf8))
        signer = SigV4Signer(
            credentials: S3Credentials(accessKeyID: context.credentials.access_key_id,
                                       secretAccessKey: context.credentials.secret_access_key,
                                       sessionToken: context.credentials.token),
            region: context.region, service: context.service)
        date = try #require(ISO8601DateFormatter().date(from: context.timestamp))
        canonicalRequest = try read("header-canonical-request.txt")
        stringToSign = try read("header-string-to-sign.txt")
        signature = try read("header-signature.txt").trimmingCharacters(in: .whitespacesAndNewlines)

        // request.txt: "METHOD TARGET HTTP/1.1", header lines "Name:value", a blank line, the body.
        let text = try read("request.txt")
        let (head, body) = text.range(of: "\n\n").map { (String(text[..<$0.lowerBound]), String(text[$0.upperBound...])) }
            ?? (text, "")
        var lines = head.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        while lines.last == "" { lines.removeLast() }
        let requestLine = lines.removeFirst().split(separator: " ")
        let target = String(requestLine[1])
        let (path, queryText) = target.firstIndex(of: "?").map { (String(target[..<$0]), String(target[target.index(after: $0)...])) }
            ?? (target, "")
        let query = queryText.isEmpty ? [] : queryText.split(separator: "&").map { pair -> (name: String, value: String) in
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            return (name: parts[0].removingPercentEncoding!, value: parts.count > 1 ? parts[1].removingPercentEncoding! : "")
        }
        var headers = lines.map { line -> (name: String, value: String) in
            let colon = line.firstIndex(of: ":")!
            return (name: String(line[..<colon]), value: String(line[line.index(after: colon)...]))
        }
        let payloadHash = Digest.hex(Digest.sha256(Array(body.utf8)))
        if context.sign_body { headers.append((name: "x-amz-content-sha256", value: payloadHash)) }
        request = SigV4Signer.Request(method: String(requestLine[0]), path: AWSPercentEncoding.encodePath(path),
                                      query: query, headers: headers, payloadHash: payloadHash)
    }
}
