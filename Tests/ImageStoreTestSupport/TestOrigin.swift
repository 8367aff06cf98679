import Foundation
import ImageStore
import Synchronization
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The loader tests' HTTP origin: `test_server.py` on 127.0.0.1 at a free port, in a child
/// process that the test (or `deinit`) kills (and that dies with the test process anyway).
public final class TestOrigin: Sendable {
    /// One scripted response; see `test_server.py` for what each field does.
    public struct Response: Encodable, Sendable {
        public var status: Int?
        public var fixture: String?
        public var body_size: Int?
        public var headers: [String: String]?
        public var conditional: Bool?
        public var delay: Double?
        public var body_delay: Double?
        public var corrupt: Bool?
        public var cut: Int?
        public var truncate: Int?
        public var length_delta: Int?
        public var no_length: Bool?
        public var chunk_size: Int?
        public var chunk_delay: Double?

        public init(status: Int? = nil, fixture: String? = nil, body_size: Int? = nil, headers: [String: String]? = nil,
                    conditional: Bool? = nil, delay: Double? = nil, body_delay: Double? = nil, corrupt: Bool? = nil,
                    cut: Int? = nil, truncate: Int? = nil, length_delta: Int? = nil, no_length: Bool? = nil,
                    chunk_size: Int? = nil, chunk_delay: Double? = nil) {
            self.status = status
            self.fixture = fixture
            self.body_size = body_size
            self.headers = headers
            self.conditional = conditional
            self.delay = delay
            self.body_delay = body_delay
            self.corrupt = corrupt
            self.cut = cut
            self.truncate = truncate
            self.length_delta = length_delta
            self.no_length = no_length
            self.chunk_size = chunk_size
            self.chunk_delay = chunk_delay
        }

        public static func image(_ fixture: String, _ headers: [String: String] = [:]) -> Response {
            Response(fixture: fixture, headers: headers)
        }
    }

    /// What the origin saw for one path.
    public struct PathStats: Decodable, Sendable {
        public var requests: Int
        public var conditional: Int
        public var not_modified: Int
        public var bytes_sent: Int
        public var aborted: Bool
        public var last_headers: [String: String]
    }

    public let port: Int
    private let server: ChildProcess.Collecting
    private let stopped = Atomic<Bool>(false)
    /// After `stop()`, a socket bound to the port and never listening: a connection is refused,
    /// and the port stays in use, so no other test's server (tests run in parallel, each
    /// binding port 0) is handed it. One was, and a load meant to find nothing listening got
    /// that server's 404. -1 before.
    private let portHold = Mutex<Int32>(-1)
    /// Control requests go through the transport under test's sibling: a plain session.
    private let control = URLSessionTransport()

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("test_server.py").path

    /// Starts the server and waits (up to 60 s: the machine may be loaded) for its port.
    public init() throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let portFile = directory + "/port"
        let process = try ChildProcess.Collecting("/usr/bin/env", ["python3", Self.script, Fixtures.directory, portFile])
        server = process
        let deadline = Date().addingTimeInterval(60)
        var port: Int?
        while port == nil {
            if let text = try? String(contentsOfFile: portFile, encoding: .utf8), let value = Int(text) {
                port = value
            } else if !process.isRunning || Date() > deadline {
                process.kill()
                throw TestOriginError(message: "the test HTTP server did not start (python3 \(Self.script))")
            } else {
                usleep(20_000)
            }
        }
        self.port = port!
    }

    deinit {
        if !stopped.exchange(true, ordering: .acquiringAndReleasing) { server.kill() }
        portHold.withLock { if $0 >= 0 { close($0) } }
    }

    /// Kills the server and reaps it, then holds its port (`portHold`) until the origin goes.
    /// Idempotent. Loads after this find nothing listening: their connections are refused.
    public func stop() {
        guard !stopped.exchange(true, ordering: .acquiringAndReleasing) else { return }
        server.kill()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        // The server's closed connections may leave the port in TIME_WAIT; that does not stop a bind.
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withLoopbackAddress(port: port, fd, bind)
        // Without the hold, a load may still reach another server that took the port: say so.
        #expect(fd >= 0 && bound == 0, "could not hold the stopped origin's port \(port): errno \(errno)")
        portHold.withLock { $0 = fd }
    }

    /// The absolute URL of `path` on this origin.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Makes `path` answer with `responses`, one per request, the last one repeating.
    public func script(_ path: String, _ responses: Response...) async throws {
        var request = URLRequest(url: URL(string: url("/_script?path=" + path))!)
        request.httpMethod = "POST"
        request.httpBody = try JSONEncoder().encode(responses)
        let (response, _) = try await control.fetch(request, bodyLimit: 1 << 20)
        #expect(response.statusCode == 200)
    }

    /// What the origin saw for `path`.
    public func stats(_ path: String) async throws -> PathStats {
        let request = URLRequest(url: URL(string: url("/_stats?path=" + path))!)
        let (_, body) = try await control.fetch(request, bodyLimit: 1 << 20)
        return try JSONDecoder().decode(PathStats.self, from: body)
    }

    /// The most requests the origin served at once.
    public func maxActive() async throws -> Int {
        struct Global: Decodable { var max_active: Int }
        let (_, body) = try await control.fetch(URLRequest(url: URL(string: url("/_stats"))!), bodyLimit: 1 << 20)
        return try JSONDecoder().decode(Global.self, from: body).max_active
    }
}

public struct TestOriginError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

