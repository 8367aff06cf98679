import Foundation
import Testing
@testable import SharedTier

/// An error answer whose body is not an S3 error document (a proxy's HTML page in front of the
/// tier): the status still decides the error, and its message says the body was not S3 XML.
/// Before, the parse failure was dropped by a `try?` and the message was empty.
@Suite(.timeLimit(.minutes(1)))
struct S3ErrorBodyTests {
    @Test func aServerErrorWithAnHTMLBodyNamesTheBodyInItsMessage() async throws {
        let stub = try OneAnswerServer(answer: "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\n"
                                              + "Content-Length: 23\r\nConnection: close\r\n\r\n<html>bad gateway</html")
        defer { stub.stop() }
        let tier = try SharedTier(configuration: .init(s3: S3Configuration(
            endpoint: URL(string: "http://127.0.0.1:\(stub.port)")!, bucket: "b", credentials: S3Server.credentials,
            requestTimeout: .seconds(10))))
        guard case let .miss(.failed(error)) = await tier.lookup("https://origin.test/a.jpg") else {
            Issue.record("a 502 was not a failed miss")
            return
        }
        guard case let .serverError(status, code, message) = error else {
            Issue.record("a 502 gave \(error)")
            return
        }
        #expect(status == 502)
        #expect(code.isEmpty)
        #expect(message.contains("not S3 XML"), "\(message)")
    }
}

/// A server on 127.0.0.1 that answers one connection with `answer` after reading its request
/// head, then closes. Its thread ends when it has answered or `stop()` closes the socket.
private final class OneAnswerServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32

    init(answer: String) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw S3ServerError(message: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound else { close(listener); throw S3ServerError(message: "bind/listen: errno \(errno)") }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread {
            // accept fails once stop() has closed the listener: then nobody is left to answer.
            let connection = accept(listener, nil, nil)
            if connection >= 0 { Self.answer(connection, with: answer) }
        }
    }

    /// Reads the request head from `connection`, writes `answer` and closes it.
    private static func answer(_ connection: Int32, with answer: String) {
        defer { close(connection) }
        var head = [UInt8]()
        var byte: UInt8 = 0
        while !head.ends(with: [13, 10, 13, 10]), read(connection, &byte, 1) == 1 { head.append(byte) }
        let bytes = Array(answer.utf8)
        _ = bytes.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
    }

    func stop() { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
