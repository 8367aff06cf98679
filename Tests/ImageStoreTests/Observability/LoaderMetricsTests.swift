import Foundation
import ImageStore
import ImageStoreTestSupport
import Locking
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `ImageLoader.metrics` and the loader's reports to the store's event seam.
@Suite struct LoaderMetricsTests {
    /// An origin in memory: each path answers with a fixed status and body.
    struct FakeOrigin: ImageTransport {
        let answers: [String: (status: Int, body: Data)]
        func fetch(_ request: URLRequest, bodyLimit: Int) async throws -> (HTTPURLResponse, Data) {
            let url = request.url!
            let answer = answers[url.path] ?? (404, Data())
            let response = HTTPURLResponse(url: url, statusCode: answer.status, httpVersion: "HTTP/1.1",
                                           headerFields: ["Content-Length": "\(answer.body.count)", "Cache-Control": "max-age=3600"])!
            return (response, answer.body)
        }
    }

    @Test func downloadsFailuresByReasonAndNegativeCacheHitsAreCounted() async throws {
        let png = try Fixtures.image("shapes.png")
        let origin = FakeOrigin(answers: ["/a.png": (200, png), "/broken.png": (200, Data("nope".utf8)), "/down.png": (503, Data())])
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let store = try ImageStore(path: directory, configuration: makeConfiguration(validation: .rejectInvalid))
            defer { store.close() }
            let loader = try ImageLoader(store: store, transport: origin)
            _ = try await loader.load("https://origin.test/a.png")
            _ = try await loader.load("https://origin.test/a.png")  // from the store
            for path in ["/missing.png", "/broken.png", "/down.png", "/missing.png"] {
                await #expect(throws: ImageLoaderError.self) { try await loader.load("https://origin.test" + path) }
            }
            let metrics = loader.metrics
            #expect(metrics.requests == 4)
            #expect(metrics.failures == ["http_4xx": 1, "invalid_image": 1, "http_5xx": 1])
            #expect(metrics.negativeCacheHits == 1)
            #expect(metrics.bytesDownloaded == png.count + 4)
            #expect(metrics.prometheusExposition().contains("imgstore_loader_failures_total{reason=\"http_4xx\"} 1\n"))
        }
    }

    @Test func aFailedPrefetchReachesTheStoresEventHandler() async throws {
        let failures = LockedValue<[String]>([])
        var configuration = makeConfiguration(validation: .rejectInvalid)
        configuration.eventHandler = { event in
            if case let .backgroundFailure(.prefetch, error) = event { failures.withLock { $0.append("\(error)") } }
        }
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let store = try ImageStore(path: directory, configuration: configuration)
            defer { store.close() }
            let loader = try ImageLoader(store: store, transport: FakeOrigin(answers: [:]))
            await loader.prefetch(["https://origin.test/gone.png"]).value
            store.drainEventsForTesting()
            #expect(failures.withLock { $0 } == [ImageLoaderError.httpStatus(url: "https://origin.test/gone.png", status: 404).description])
        }
    }
}
