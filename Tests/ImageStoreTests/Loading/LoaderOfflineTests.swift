import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Expired entries are served stale when the origin is away; failures are remembered briefly.
@Suite struct LoaderOfflineTests {
    // MARK: - Stale fallback

    @Test func staleEntryIsServedWhenTheOriginIsStopped() async throws {
        try await withLoader { loader, origin, clock in
            try await origin.script("/o.png", .image("gradient-rgb.png", ["Cache-Control": "max-age=60"]))
            let url = origin.url("/o.png")
            let fresh = try await loader.load(url)
            origin.stop()
            clock.advance(by: 61)
            let stale = try await loader.load(url)
            #expect(stale.source == .stale)
            #expect(stale.data == fresh.data)
            guard case .unreachable = stale.staleReason else { Issue.record("reason \(String(describing: stale.staleReason))"); return }
            // Remembered as failed: served stale again without trying the origin.
            let again = try await loader.load(url)
            #expect(again.source == .stale)
            #expect(loader.statistics.requests == 2)
            #expect(loader.statistics.negativeHits == 1)
        }
    }

    @Test func staleEntryIsServedOn5xx() async throws {
        try await withLoader { loader, origin, clock in
            try await origin.script("/five", .image("shapes.png", ["Cache-Control": "max-age=60"]), TestOrigin.Response(status: 503))
            let url = origin.url("/five")
            _ = try await loader.load(url)
            clock.advance(by: 61)
            let stale = try await loader.load(url)
            #expect(stale.source == .stale)
            #expect(stale.staleReason == .httpStatus(url: url, status: 503))
        }
    }

    @Test func a404IsNotAnOfflineFailure() async throws {
        try await withLoader { loader, origin, clock in
            try await origin.script("/gone", .image("shapes.png", ["Cache-Control": "max-age=60"]), TestOrigin.Response(status: 404))
            let url = origin.url("/gone")
            _ = try await loader.load(url)
            clock.advance(by: 61)
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(error == .httpStatus(url: url, status: 404))
        }
    }

    @Test(arguments: [ImageLoader.StaleFallback.never, .onUnreachable])
    func policiesThatRefuseStaleOn5xx(policy: ImageLoader.StaleFallback) async throws {
        try await withLoader({ $0.staleFallback = policy }) { loader, origin, clock in
            try await origin.script("/p", .image("shapes.png", ["Cache-Control": "max-age=60"]), TestOrigin.Response(status: 500))
            let url = origin.url("/p")
            _ = try await loader.load(url)
            clock.advance(by: 61)
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(error == .httpStatus(url: url, status: 500))
        }
    }

    @Test func maxStaleAgeLimitsHowOldAStaleEntryMayBe() async throws {
        try await withLoader({ $0.maxStaleness = .seconds(3600) }) { loader, origin, clock in
            try await origin.script("/old.png", .image("shapes.png", ["Cache-Control": "max-age=60"]))
            let url = origin.url("/old.png")
            _ = try await loader.load(url)
            origin.stop()
            clock.advance(by: 60 + 3601)
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            guard case .unreachable = error else { Issue.record("got \(String(describing: error))"); return }
        }
    }

    @Test func aStoppedOriginWithNothingStoredIsUnreachable() async throws {
        try await withLoader { loader, origin, _ in
            let url = origin.url("/never.png")
            origin.stop()
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            guard case .unreachable = error else { Issue.record("got \(String(describing: error))"); return }
        }
    }

    /// Tests run in parallel, and each origin's server binds port 0 for a free port: a stopped
    /// origin keeps its port in use (the kernel hands out no port in use), or another test's
    /// server may get it and answer the loads meant to find nothing (a CI run got that server's
    /// 404 instead of `unreachable`). In use: a plain bind to it fails.
    @Test func aStoppedOriginsPortStaysInUse() throws {
        let origin = try TestOrigin()
        origin.stop()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        let bound = withLoopbackAddress(port: origin.port, fd, bind)
        let bindError = errno
        #expect(bound != 0 && bindError == EADDRINUSE, "the stopped origin's port \(origin.port) was free")
    }

    @Test func aSlowOriginTimesOut() async throws {
        // The one wall-clock test: a 1 s timeout against an origin that waits 120 s.
        try await withLoader({ $0.downloadTimeout = .seconds(1) }) { loader, origin, _ in
            try await origin.script("/slow", TestOrigin.Response(fixture: "shapes.png", delay: 120))
            let url = origin.url("/slow")
            let error = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(error == .timedOut(url: url, after: .seconds(1)))
        }
    }

    // MARK: - Negative caching

    @Test func aFailedURLIsNotRequestedAgainWithinTheNegativeTTL() async throws {
        try await withLoader({ $0.negativeCacheLifetime = .seconds(10) }) { loader, origin, clock in
            try await origin.script("/broken", TestOrigin.Response(status: 404), .image("shapes.png"))
            let url = origin.url("/broken")
            let first = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(first == .httpStatus(url: url, status: 404))
            clock.advance(by: 9)
            let second = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(second == .recentlyFailed(url: url, until: clock.now.addingTimeInterval(1), cause: .httpStatus(url: url, status: 404)))
            #expect(try await origin.stats("/broken").requests == 1)
            clock.advance(by: 2)
            #expect(try await loader.load(url).source == .network)
            #expect(try await origin.stats("/broken").requests == 2)
        }
    }

    @Test func invalidBodiesAreRememberedToo() async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script("/bad.png", TestOrigin.Response(fixture: "shapes.png", corrupt: true))
            let url = origin.url("/bad.png")
            for _ in 0..<5 { _ = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) } }
            let stats = try await origin.stats("/bad.png")
            #expect(stats.requests == 1)
            loader.forgetFailures()
            _ = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) }
            #expect(try await origin.stats("/bad.png").requests == 2)
        }
    }

    @Test func negativeTTLZeroTurnsItOff() async throws {
        try await withLoader({ $0.negativeCacheLifetime = .zero }) { loader, origin, _ in
            let url = origin.url("/missing")
            for _ in 0..<3 { _ = await loaderError { () throws(ImageLoaderError) in try await loader.load(url) } }
            let stats = try await origin.stats("/missing")
            #expect(stats.requests == 3)
        }
    }
}
