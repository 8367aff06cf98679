import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

@Suite struct LoaderCoalescingTests {
    // MARK: - One download per URL

    @Test func concurrentLoadsOfOneURLSendOneRequest() async throws {
        try await withLoader { loader, origin, _ in
            // The delay keeps the download open while all the callers arrive.
            try await origin.script("/a.png", TestOrigin.Response(fixture: "photo-baseline.jpg", body_delay: 0.5))
            let url = origin.url("/a.png")
            let images = try await withThrowingTaskGroup(of: LoadedImage.self) { group in
                for _ in 0..<20 { group.addTask { try await loader.load(url) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let expected = try Fixtures.image("photo-baseline.jpg")
            #expect(images.count == 20)
            #expect(images.allSatisfy { $0.data == expected && $0.facts.format == .jpeg })
            #expect(try await origin.stats("/a.png").requests == 1)
            #expect(loader.statistics.requests == 1)
            // Joiners share the first caller's result; a late arrival may find the entry stored.
            let fromNetwork = images.filter { $0.source == .network }.count
            #expect(fromNetwork == loader.statistics.coalescedLoads + 1)
            #expect(fromNetwork + images.filter { $0.source == .disk }.count == 20)
            #expect(try await loader.load(url).source == .disk)
            #expect(try await origin.stats("/a.png").requests == 1)
        }
    }

    @Test func spellingsOfOneURLShareOneDownload() async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script("/same.png", TestOrigin.Response(fixture: "shapes.png", delay: 0.3))
            let spellings = [origin.url("/same.png"), origin.url("/same.png").replacingOccurrences(of: "http://", with: "HTTP://"),
                             origin.url("/same.png") + "#fragment"]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for spelling in spellings { group.addTask { _ = try await loader.load(spelling) } }
                try await group.waitForAll()
            }
            #expect(try await origin.stats("/same.png").requests == 1)
        }
    }

    @Test func distinctURLsDownloadInParallelUpToTheLimit() async throws {
        try await withLoader({ $0.maxConcurrentDownloads = 2 }) { loader, origin, _ in
            for n in 0..<6 { try await origin.script("/p\(n).png", TestOrigin.Response(fixture: "shapes.png", delay: 0.2)) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<6 { group.addTask { _ = try await loader.load(origin.url("/p\(n).png")) } }
                try await group.waitForAll()
            }
            #expect(try await origin.maxActive() <= 2)
            #expect(loader.statistics.requests == 6)
        }
    }

    // MARK: - Cancellation

    @Test func cancellingOneCallerDoesNotCancelTheSharedDownload() async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script("/slow.png", TestOrigin.Response(fixture: "gradient-rgb.png", body_delay: 1))
            let url = origin.url("/slow.png")
            let staying = Task { try await loader.load(url) }
            let leaving = Task { try await loader.load(url) }
            try await waitUntil { try await origin.stats("/slow.png").requests == 1 }
            leaving.cancel()
            await #expect(throws: ImageLoaderError.cancelled) { try await leaving.value }
            let image = try await staying.value
            #expect(image.source == .network)
            #expect(image.data == (try Fixtures.image("gradient-rgb.png")))
            #expect(try await origin.stats("/slow.png").requests == 1)
            #expect(try loader.store.get(url) != nil)
        }
    }

    @Test func lastCallerOutCancelsTheDownload() async throws {
        try await withLoader { loader, origin, _ in
            try await origin.script(
                "/abandoned.png", TestOrigin.Response(fixture: "gradient-rgb.png", body_delay: 30),
                TestOrigin.Response(fixture: "gradient-rgb.png"))
            let url = origin.url("/abandoned.png")
            let first = Task { try await loader.load(url) }
            let second = Task { try await loader.load(url) }
            try await waitUntil { try await origin.stats("/abandoned.png").requests == 1 }
            first.cancel()
            second.cancel()
            await #expect(throws: ImageLoaderError.cancelled) { try await first.value }
            await #expect(throws: ImageLoaderError.cancelled) { try await second.value }
            // The abandoned download is gone (a new load sends a new request, instead of waiting
            // 30 s for the old one), it stored nothing, and it was not remembered as a failure.
            #expect(try loader.store.get(url, allowingStale: true) == nil)
            let image = try await loader.load(url)
            #expect(image.source == .network)
            #expect(try await origin.stats("/abandoned.png").requests == 2)
        }
    }

    @Test func aLoadCancelledBeforeItStartsThrowsCancelled() async throws {
        try await withLoader { loader, origin, _ in
            let url = origin.url("/x/shapes.png")
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await loader.load(url)
            }
            await #expect(throws: ImageLoaderError.cancelled) { try await task.value }
            let stats = try await origin.stats("/x/shapes.png")
            #expect(stats.requests == 0)
        }
    }

    // MARK: - Prefetch

    @Test func prefetchFillsTheStoreInTheBackground() async throws {
        try await withLoader { loader, origin, _ in
            let names = try Fixtures.images().map(\.name)
            let urls = names.map { origin.url("/prefetch/" + $0) } + [origin.url("/prefetch/missing.png")]
            await loader.prefetch(urls).value
            for (name, url) in zip(names, urls) {
                let image = try await loader.load(url)
                #expect(image.source == .disk, "\(name)")
                #expect(image.data == (try Fixtures.image(name)))
            }
            #expect(loader.statistics.requests == names.count + 1)
        }
    }
}

/// Polls `condition` until it holds (up to 60 s: the machine may be loaded).
func waitUntil(sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool) async throws {
    // Bounded by checks, not by the wall clock: while synchronous tests hold every thread of the
    // cooperative pool (a 2-core machine has two), this task does not run, and a wall-clock
    // deadline would pass without the condition being checked. 3 000 checks 20 ms apart are
    // a minute of this task's own time.
    for _ in 0..<3000 {
        if try await condition() { return }
        try await Task.sleep(for: .milliseconds(20))
    }
    Issue.record("condition not met in 3 000 checks 20 ms apart", sourceLocation: sourceLocation)
}
