import Foundation
import ImageStore
import ImageStoreTestSupport
import Synchronization
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The loader tests' HTTP origin: `test_server.py` on 127.0.0.1 at a free port, in a child
/// process that `withTestOrigin` always kills (and that dies with the test process anyway).
final class TestOrigin: Sendable {
    /// One scripted response; see `test_server.py` for what each field does.
    struct Response: Encodable {
        var status: Int?
        var fixture: String?
        var body_size: Int?
        var headers: [String: String]?
        var conditional: Bool?
        var delay: Double?
        var body_delay: Double?
        var corrupt: Bool?
        var cut: Int?
        var truncate: Int?
        var length_delta: Int?
        var no_length: Bool?
        var chunk_size: Int?
        var chunk_delay: Double?

        static func image(_ fixture: String, _ headers: [String: String] = [:]) -> Response {
            Response(fixture: fixture, headers: headers)
        }
    }

    /// What the origin saw for one path.
    struct PathStats: Decodable {
        var requests: Int
        var conditional: Int
        var not_modified: Int
        var bytes_sent: Int
        var aborted: Bool
        var last_headers: [String: String]
    }

    let port: Int
    private let server: ChildProcess.Collecting
    private let stopped = Atomic<Bool>(false)
    /// Control requests go through the transport under test's sibling: a plain session.
    private let control = URLSessionTransport()

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("test_server.py").path

    /// Starts the server and waits (up to 60 s: the machine may be loaded) for its port.
    init() throws {
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

    deinit { stop() }

    /// Kills the server and reaps it. Idempotent. Loads after this find nothing listening.
    func stop() {
        if !stopped.exchange(true, ordering: .acquiringAndReleasing) { server.kill() }
    }

    /// The absolute URL of `path` on this origin.
    func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// Makes `path` answer with `responses`, one per request, the last one repeating.
    func script(_ path: String, _ responses: Response...) async throws {
        var request = URLRequest(url: URL(string: url("/_script?path=" + path))!)
        request.httpMethod = "POST"
        request.httpBody = try JSONEncoder().encode(responses)
        let (response, _) = try await control.fetch(request, bodyLimit: 1 << 20)
        #expect(response.statusCode == 200)
    }

    /// What the origin saw for `path`.
    func stats(_ path: String) async throws -> PathStats {
        let request = URLRequest(url: URL(string: url("/_stats?path=" + path))!)
        let (_, body) = try await control.fetch(request, bodyLimit: 1 << 20)
        return try JSONDecoder().decode(PathStats.self, from: body)
    }

    /// The most requests the origin served at once.
    func maxActive() async throws -> Int {
        struct Global: Decodable { var max_active: Int }
        let (_, body) = try await control.fetch(URLRequest(url: URL(string: url("/_stats"))!), bodyLimit: 1 << 20)
        return try JSONDecoder().decode(Global.self, from: body).max_active
    }
}

struct TestOriginError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Everything a loader test needs: an origin, a store with validation on and a manual clock,
/// and a loader over them. The server is killed and the store checked, closed and deleted
/// however `body` ends.
func withLoader<R>(
    _ configure: (inout ImageLoader.Configuration) -> Void = { _ in },
    maxEntryBytes: Int? = nil,
    _ body: (ImageLoader, TestOrigin, ManualClock) async throws -> R
) async throws -> R {
    let origin = try TestOrigin()
    defer { origin.stop() }
    let directory = makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let clock = ManualClock()
    var storeConfiguration = makeConfiguration(validation: .rejectInvalid, clock: clock)
    storeConfiguration.durability = .none
    if let maxEntryBytes { storeConfiguration.maxEntryBytes = maxEntryBytes }
    let store = try ImageStore(path: directory + "/store", configuration: storeConfiguration)
    defer { store.close() }
    var configuration = ImageLoader.Configuration()
    configuration.timeout = 60  // generous: the machine may be loaded
    configure(&configuration)
    let loader = try ImageLoader(store: store, configuration: configuration)
    let result = try await body(loader, origin, clock)
    try checkConsistency(of: store)
    return result
}

/// The error `body` throws, as an `ImageLoaderError` (a test failure when it does not throw).
func loaderError(_ body: () async throws(ImageLoaderError) -> LoadedImage,
                 sourceLocation: SourceLocation = #_sourceLocation) async -> ImageLoaderError? {
    do {
        let image = try await body()
        Issue.record("expected an error, loaded \(image.data.count) bytes from \(image.source)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}
