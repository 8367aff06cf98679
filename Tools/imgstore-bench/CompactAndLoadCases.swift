import Foundation
import ImageStore
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Compaction against `mdb_copy -c`, and the loader's coalesced downloads against fetching and
/// putting every load separately (what app code without a loader does).
enum CompactAndLoadCases {
    static let all: [BenchmarkCase] = [
        BenchmarkCase(name: "compact") { o in compaction(o) },
        BenchmarkCase(name: "load.coalesced") { o in coalescedLoads(o) },
    ]

    // MARK: - compact

    /// A store filled with small images, 90 % removed, closed; then copied twice (each copy synced, untimed) and
    /// compacted by `ImageStore.compact(path:)` (open, checkpoint, compacted copy, fsyncs, rename, close) and by
    /// `mdb_copy -c` (compacted copy, no fsync). Ops: one compaction; MB: the file before.
    static func compaction(_ options: BenchmarkOptions) -> [Measurement] {
        let count = options.quick ? 400 : 5_000
        let payload = ImageCorpus.ladders[.jpeg]![0]
        let source = options.scratch("compact-source")
        defer { options.removeScratch(source) }
        do {
            var configuration = ImageStore.Configuration()
            configuration.validation = .none
            let store = try ImageStore(path: source, configuration: configuration)
            for n in 0..<count { try store.put(payload + Data(count: n % 4096), for: "https://cdn.example.com/img/\(n).jpg", durability: .background) }
            for n in 0..<count where n % 10 != 0 { try store.remove("https://cdn.example.com/img/\(n).jpg", durability: .background) }
            store.close()
        } catch { fail("compact fill: \(error)") }
        var status = stat()
        let bytes = stat(source + "/data.mdb", &status) == 0 ? Int(status.st_size) : 0

        var imgstore: Measurement?
        var mdbCopy: Measurement?
        for round in 0..<max(1, options.repetitions) {
            let a = options.scratch("compact-a-\(round)")
            let b = options.scratch("compact-b-\(round)")
            let out = options.scratch("compact-b-out-\(round)")
            defer { for path in [a, b, out] { options.removeScratch(path) } }
            for copy in [a, b] {
                try? FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
                try? FileManager.default.copyItem(atPath: source + "/data.mdb", toPath: copy + "/data.mdb")
                // On disk before the clock starts, as a closed store's file is: imgstore's open syncs
                // LMDB (its first checkpoint) and would otherwise write the copy's pages in the timed part.
                let fd = open(copy + "/data.mdb", O_RDONLY | O_CLOEXEC)
                if fd < 0 || fsync(fd) != 0 { fail("fsync \(copy)/data.mdb: \(String(cString: strerror(errno)))") }
                close(fd)
            }
            try? FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            let t0 = BenchmarkRunner.nanoseconds()
            do { _ = try ImageStore.compact(path: a) } catch { fail("compact: \(error)") }
            let ours = Double(BenchmarkRunner.nanoseconds() - t0) / 1e9
            let t1 = BenchmarkRunner.nanoseconds()
            let status = runProcess("/usr/bin/mdb_copy", ["-c", b, out])
            let theirs = Double(BenchmarkRunner.nanoseconds() - t1) / 1e9
            if status != 0 { fail("mdb_copy -c exited \(status)") }
            let mine = Measurement(caseName: "compact", system: "imgstore", threads: 1, operations: 1, bytes: bytes,
                                   seconds: ours, latencies: [ours * 1e9], cpuSeconds: ours)
            let other = Measurement(caseName: "compact", system: "mdb_copy -c", threads: 1, operations: 1, bytes: bytes,
                                    seconds: theirs, latencies: [theirs * 1e9])
            if imgstore == nil || mine.seconds < imgstore!.seconds { imgstore = mine }
            if mdbCopy == nil || other.seconds < mdbCopy!.seconds { mdbCopy = other }
        }
        return [imgstore!, mdbCopy!]
    }

    /// Runs a program to completion (posix_spawn; Foundation's Process is avoided, see the tests).
    private static func runProcess(_ path: String, _ arguments: [String]) -> Int32 {
        var pid: pid_t = 0
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        guard posix_spawn(&pid, path, nil, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (status >> 8) & 0xFF
    }

    // MARK: - load.coalesced

    /// An origin in the process: answers every request with one image after `delay`.
    final class SlowOrigin: ImageTransport {
        let delay: Duration
        let body: Data
        init(delay: Duration, body: Data) {
            self.delay = delay
            self.body = body
        }
        func fetch(_ request: URLRequest, bodyLimit: Int) async throws -> (HTTPURLResponse, Data) {
            try await Task.sleep(for: delay)
            let response = HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: "HTTP/1.1",
                                           headerFields: ["Content-Length": String(body.count), "Cache-Control": "max-age=3600"])!
            return (response, body)
        }
    }

    /// 64 concurrent loads of 16 new URLs per round, against an origin answering in 5 ms: the
    /// loader sends 16 requests a round; the naive way (fetch then put, per load) sends 64.
    static func coalescedLoads(_ options: BenchmarkOptions) -> [Measurement] {
        let rounds = options.quick ? 5 : 40
        let payload = ImageCorpus.ladders[.jpeg]![1]
        let origin = SlowOrigin(delay: .milliseconds(5), body: payload)
        var configuration = ImageStore.Configuration()
        configuration.durability = .batched(within: .milliseconds(50))
        let ours = options.scratch("load-loader")
        let naive = options.scratch("load-naive")
        defer { options.removeScratch(ours); options.removeScratch(naive) }
        let loaderStore: ImageStore
        let naiveStore: ImageStore
        do {
            loaderStore = try ImageStore(path: ours, configuration: configuration)
            naiveStore = try ImageStore(path: naive, configuration: configuration)
        } catch { fail("load.coalesced: \(error)") }
        defer { loaderStore.close(); naiveStore.close() }
        var loaderConfiguration = ImageLoader.Configuration()
        loaderConfiguration.maxConcurrentDownloads = 16
        let loader: ImageLoader
        do { loader = try ImageLoader(store: loaderStore, configuration: loaderConfiguration, transport: origin) }
        catch { fail("load.coalesced: \(error)") }

        func time(_ body: @escaping @Sendable (Int) async -> Void) -> Double {
            let start = BenchmarkRunner.nanoseconds()
            let done = DispatchSemaphore(value: 0)
            Task {
                for round in 0..<rounds { await body(round) }
                done.signal()
            }
            done.wait()
            return Double(BenchmarkRunner.nanoseconds() - start) / 1e9
        }
        let loaderSeconds = time { round in
            await withTaskGroup(of: Void.self) { group in
                for task in 0..<64 {
                    group.addTask {
                        do { _ = try await loader.image(for: "https://cdn.example.com/r\(round)/\(task % 16).jpg") } catch { fail("load: \(error)") }
                    }
                }
            }
        }
        let naiveSeconds = time { round in
            await withTaskGroup(of: Void.self) { group in
                for task in 0..<64 {
                    group.addTask {
                        let url = "https://cdn.example.com/r\(round)/\(task % 16).jpg"
                        do {
                            if try naiveStore.image(for: url) != nil { return }
                            let (_, data) = try await origin.fetch(URLRequest(url: URL(string: url)!), bodyLimit: 64 << 20)
                            try naiveStore.put(data, for: url)
                        } catch { fail("naive load: \(error)") }
                    }
                }
            }
        }
        let loads = rounds * 64
        let requests = loader.statistics.requests
        if requests != rounds * 16 { fail("load.coalesced: the loader sent \(requests) requests, expected \(rounds * 16)") }
        return [
            Measurement(caseName: "load.coalesced", system: "imgstore (\(requests) requests)", threads: 64, operations: loads,
                        bytes: loads * payload.count, seconds: loaderSeconds, latencies: [loaderSeconds * 1e9 / Double(loads)]),
            Measurement(caseName: "load.coalesced", system: "fetch+put per load", threads: 64, operations: loads,
                        bytes: loads * payload.count, seconds: naiveSeconds, latencies: [naiveSeconds * 1e9 / Double(loads)]),
        ]
    }
}
