import Foundation
import ImageStoreTestSupport
import Testing
@testable import SharedTier

/// An upload whose connection drops mid-body leaves no object: a host that dies while
/// uploading can never leave a torn image for the fleet.
// 10 minutes: the limit also counts the wait for one of `ServerSlots.limit` servers, which under the
// whole `swift test` (every server suite at once) took this suite past 3 minutes.
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(10)))
struct PartialUploadTests {
    @Test func aPutCutOffMidBodyLeavesNoObject() async throws {
        try await S3Server.with { server in
            let client = try server.client()
            let body = TestObjects.bytes(3, count: 200_000)
            // The control: the same raw request sent whole is stored, so the cut one is refused
            // for being cut, not for a bad signature.
            let whole = try RawPut(server: server, key: "partial/whole", body: body)
            let answer = try whole.send(byteCount: body.count)
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(200))")
            #expect(try await client.head("partial/whole") != nil)

            for sent in [0, 1, body.count / 2, body.count - 1] {
                let key = "partial/cut-\(sent)"
                _ = try RawPut(server: server, key: key, body: body).send(byteCount: sent)
                #expect(try await client.head(key) == nil, "\(sent) of \(body.count) bytes sent")
                #expect(try await client.get(key) == nil)
            }
        }
    }
}

/// A signed PUT written by hand on a socket: the head announces the whole body's length,
/// `send(byteCount:)` writes that many bytes of it and closes the connection.
struct RawPut {
    let port: Int
    let head: String
    let body: Data

    init(server: S3Server, key: String, body: Data) throws {
        port = server.s3Port
        self.body = body
        let path = "/\(S3Server.bucket)/\(AWSPercentEncoding.encodePath(key))"
        let hash = Digest.hex(Digest.sha256(body))
        let signer = SigV4Signer(credentials: S3Server.credentials, region: "us-east-1")
        let signed = signer.sign(SigV4Signer.Request(method: "PUT", path: path, headers: [
            (name: "Host", value: "127.0.0.1:\(port)"), (name: "x-amz-content-sha256", value: hash),
        ], payloadHash: hash), at: Date())
        var head = "PUT \(path) HTTP/1.1\r\n"
        for header in signed.headers { head += "\(header.name): \(header.value)\r\n" }
        head += "Content-Length: \(body.count)\r\nContent-Type: application/octet-stream\r\n\r\n"
        self.head = head
    }

    /// Sends the head and `byteCount` body bytes. When that is the whole body it reads the
    /// answer's first bytes; otherwise it closes at once and returns "".
    func send(byteCount: Int) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw S3ServerError(message: "socket: errno \(errno)") }
        defer { close(fd) }
        let connected = withLoopbackAddress(port: port, fd, connect)
        guard connected == 0 else { throw S3ServerError(message: "connect to \(port): errno \(errno)") }
        try write(fd, Data(head.utf8) + body.prefix(byteCount))
        guard byteCount == body.count else { return "" }
        var answer = [UInt8](repeating: 0, count: 4096)
        let n = answer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return n > 0 ? String(decoding: answer[0..<n], as: UTF8.self) : ""
    }

    private func write(_ fd: Int32, _ data: Data) throws {
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw S3ServerError(message: "write: errno \(errno)") }
                offset += n
            }
        }
    }
}
