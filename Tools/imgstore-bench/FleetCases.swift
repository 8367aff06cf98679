import Foundation
import ImageStore
import SharedTier
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A fleet of 3 hosts (each its own store and loader, in this process) replaying one Zipf(0.9) trace against an
/// origin that answers in 20 ms, with and without a shared tier on a real SeaweedFS (`Tools/s3-server.sh`, `weed`
/// on PATH). Reports the origin requests against the distinct URLs, and the load latency of a shared hit against an
/// origin fetch. Hosts replay one after another (`staggered`: a new host joins a warm fleet) or all at once
/// (`concurrent`, each host starting a third further into the trace: hot URLs are still missed by several hosts
/// before the first upload lands). The origin is an `ImageTransport` in the process, not a socket.
enum FleetCases {
    static let all: [BenchmarkCase] = [BenchmarkCase(name: "fleet.zipf") { o in zipfFleet(o) }]

    static let hosts = 3
    static let workersPerHost = 4
    static let originLatency = Duration.milliseconds(20)

    /// The origin, in the process: each URL's image after `originLatency`, fresh for an hour; counts requests.
    final class CountingOrigin: ImageTransport {
        let images: [String: Data]
        let requests = Atomic<Int>(0)
        init(_ images: [String: Data]) { self.images = images }

        func fetch(_ request: URLRequest, bodyLimit: Int) async throws -> (HTTPURLResponse, Data) {
            requests.add(1, ordering: .relaxed)
            try await Task.sleep(for: originLatency)
            let url = request.url!
            guard let body = images[url.absoluteString] else {
                return (HTTPURLResponse(url: url, statusCode: 404, httpVersion: "HTTP/1.1", headerFields: [:])!, Data())
            }
            let headers = ["Content-Length": String(body.count), "Cache-Control": "max-age=3600"]
            return (HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: headers)!, body)
        }
    }

    /// The replay's samples, handed from its task to the waiting thread.
    final class Collected: Sendable {
        let samples = Mutex<[Sample]>([])
    }

    /// One load's latency and where it came from.
    struct Sample: Sendable {
        var nanoseconds: Double
        var source: ImageSource
    }

    static func zipfFleet(_ options: BenchmarkOptions) -> [Measurement] {
        guard let server = FleetServer.start(options) else { return [] }
        defer { server.stop() }
        let distinct = options.quick ? 100 : 1000
        let loadsPerHost = options.quick ? 300 : 3000
        let set = ImageSet.make(bytes: 0, small: true, minimumCount: distinct, seed: 42)
        let trace = ZipfGenerator(keys: distinct, exponent: 0.9).trace(count: loadsPerHost, seed: 9).map { set.urls[$0] }
        let touched = Set(trace).count
        var rows: [Measurement] = []
        var sharedHits: [Double] = []
        var originFetches: [Double] = []
        var run = 0
        for concurrent in [false, true] {
            for withTier in [true, false] {
                run += 1
                let mode = concurrent ? "concurrent" : "staggered"  // see the type's comment
                let origin = CountingOrigin(Dictionary(uniqueKeysWithValues: zip(set.urls, set.images)))
                let (seconds, cpu, samples) = replay(trace, origin: origin, server: withTier ? server : nil,
                                                     prefix: "fleet-\(getpid())-\(run)/", concurrent: concurrent, options: options)
                let requests = origin.requests.load(ordering: .relaxed)
                let system = "\(hosts) hosts \(mode), \(withTier ? "shared tier" : "no tier"): \(requests) origin req / \(touched) URLs"
                rows.append(Measurement(caseName: "fleet.zipf", system: system, threads: hosts * workersPerHost,
                                        operations: samples.count, bytes: 0, seconds: seconds,
                                        latencies: samples.map(\.nanoseconds), cpuSeconds: cpu))
                if withTier {
                    sharedHits += samples.filter { $0.source == .shared }.map(\.nanoseconds)
                    originFetches += samples.filter { $0.source == .network }.map(\.nanoseconds)
                }
            }
        }
        for (label, latencies) in [("load latency: shared hit", sharedHits), ("load latency: origin fetch", originFetches)] {
            rows.append(Measurement(caseName: "fleet.zipf", system: "\(label) (\(latencies.count) loads)", threads: 1,
                                    operations: latencies.count, bytes: 0,
                                    seconds: max(latencies.reduce(0, +) / 1e9, 1e-9), latencies: latencies))
        }
        return rows
    }

    /// Every host replays `trace` with `workersPerHost` loads at once; hosts one after another (each after the last
    /// one's uploads landed) or all at once. Returns the wall time, the process's CPU time and every load's sample.
    private static func replay(_ trace: [String], origin: CountingOrigin, server: FleetServer?, prefix: String,
                               concurrent: Bool, options: BenchmarkOptions) -> (Double, Double, [Sample]) {
        let directories = (0..<hosts).map { options.scratch("fleet-host-\($0)") }
        defer { for directory in directories { options.removeScratch(directory) } }
        var storeConfiguration = ImageStore.Configuration()
        storeConfiguration.durability = .background
        let fleet: [(store: ImageStore, tier: SharedTier?, loader: ImageLoader)]
        do {
            fleet = try directories.map { directory in
                let store = try ImageStore(path: directory, configuration: storeConfiguration)
                let tier = try server.map { try SharedTier(configuration: .init(s3: $0.configuration, prefix: prefix, uploadQueueLimit: 8192)) }
                var configuration = ImageLoader.Configuration()
                configuration.durability = .background
                configuration.maxConcurrentDownloads = workersPerHost
                return (store, tier, try ImageLoader(store: store, configuration: configuration, transport: origin, sharedTier: tier))
            }
        } catch { fail("fleet.zipf: \(error)") }
        defer { for host in fleet { host.store.close() } }

        let loaders = fleet.map(\.loader)
        let tiers = fleet.map(\.tier)
        let cpuStart = processCPUSeconds()
        let start = BenchmarkRunner.nanoseconds()
        let done = DispatchSemaphore(value: 0)
        let collected = Collected()
        Task {
            var all: [Sample] = []
            if concurrent {
                await withTaskGroup(of: [Sample].self) { group in
                    for host in 0..<hosts {
                        // Host h starts h/hosts of the way into the trace: the same trace, not in lockstep.
                        let offset = host * trace.count / hosts
                        let rotated = Array(trace[offset...] + trace[..<offset])
                        group.addTask { await replayHost(loaders[host], tier: tiers[host], rotated) }
                    }
                    for await part in group { all += part }
                }
            } else {
                for host in 0..<hosts { all += await replayHost(loaders[host], tier: tiers[host], trace) }
            }
            collected.samples.withLock { $0 = all }
            done.signal()
        }
        done.wait()
        let seconds = Double(BenchmarkRunner.nanoseconds() - start) / 1e9
        return (seconds, processCPUSeconds() - cpuStart, collected.samples.withLock { $0 })
    }

    /// One host's replay of `trace`, `workersPerHost` loads at once; returns after its uploads have landed.
    private static func replayHost(_ loader: ImageLoader, tier: SharedTier?, _ trace: [String]) async -> [Sample] {
        var all: [Sample] = []
        await withTaskGroup(of: [Sample].self) { group in
            for worker in 0..<workersPerHost {
                group.addTask {
                    var mine: [Sample] = []
                    for index in stride(from: worker, to: trace.count, by: workersPerHost) {
                        let start = BenchmarkRunner.nanoseconds()
                        do {
                            let image = try await loader.image(for: trace[index])
                            mine.append(Sample(nanoseconds: Double(BenchmarkRunner.nanoseconds() - start), source: image.source))
                        } catch { fail("fleet.zipf load: \(error)") }
                    }
                    return mine
                }
            }
            for await part in group { all += part }
        }
        await tier?.waitForUploads()
        return all
    }

    private static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

/// A SeaweedFS server for the fleet case, run by `Tools/s3-server.sh` on 127.0.0.1 in a scratch directory.
struct FleetServer: Sendable {
    static let credentials = S3Credentials(accessKeyID: "imgstore-bench-key", secretAccessKey: "imgstore-bench-secret")
    static let bucket = "imgstore"
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("s3-server.sh").path

    let directory: String
    let port: Int
    var configuration: S3Configuration {
        S3Configuration(endpoint: URL(string: "http://127.0.0.1:\(port + 3)")!, bucket: Self.bucket,
                        credentials: Self.credentials, connectTimeout: .seconds(1), requestTimeout: .seconds(5))
    }

    /// Starts the server; nil (with the reason on stderr) when `weed` is not on PATH or it does not start.
    static func start(_ options: BenchmarkOptions) -> FleetServer? {
        let onPath = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .contains { FileManager.default.isExecutableFile(atPath: "\($0)/weed") }
        guard onPath else {
            FileHandle.standardError.write(Data("imgstore-bench: fleet.zipf skipped: weed is not on PATH (Tools/install-deps.sh)\n".utf8))
            return nil
        }
        setenv("AWS_ACCESS_KEY_ID", credentials.accessKeyID, 1)
        setenv("AWS_SECRET_ACCESS_KEY", credentials.secretAccessKey, 1)
        setenv("S3_BUCKET", bucket, 1)
        setenv("S3_SERVER_WATCH_PID", String(getpid()), 1)
        for attempt in 0..<4 {
            let server = FleetServer(directory: options.scratch("fleet-s3-\(attempt)"), port: 20_000 + Int.random(in: 0..<900) * 10)
            if run(["start", server.directory, String(server.port)]) == 0 { return server }
            server.stop()
        }
        FileHandle.standardError.write(Data("imgstore-bench: fleet.zipf skipped: Tools/s3-server.sh start failed\n".utf8))
        return nil
    }

    func stop() {
        _ = Self.run(["stop", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs the script to its end (posix_spawn, as the rest of the benchmark does).
    private static func run(_ arguments: [String]) -> Int32 {
        var pid: pid_t = 0
        let argv = (["/usr/bin/env", "bash", script] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        guard posix_spawn(&pid, "/usr/bin/env", nil, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (status >> 8) & 0xFF
    }
}
