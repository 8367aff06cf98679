import Foundation
import ImageStore
import Synchronization

/// imgstore's put and get against raw LMDB, SQLite, one file per entry and NSCache, on the same images.
enum StoreCases {
    static let all: [BenchmarkCase] = [
        BenchmarkCase(name: "put.sync") { o in puts("put.sync", small: false, systems: syncSystems, o) },
        BenchmarkCase(name: "put.sync.small") { o in puts("put.sync.small", small: true, systems: syncSystems, o) },
        BenchmarkCase(name: "put.batched") { o in
            puts("put.batched", small: false, systems: batchedSystems, threadCounts: [1, 4], o)
        },
        BenchmarkCase(name: "get.memory-hit") { o in memoryHits(o) },
        BenchmarkCase(name: "get.disk-hit") { o in diskHits(o) },
        BenchmarkCase(name: "get.miss") { o in misses(o) },
    ]

    /// A system to put into: made fresh in an empty directory for every measurement. `batched` systems get their puts
    /// in transactions of `putBatchSize`, and each put's latency is its whole transaction's.
    struct Maker: Sendable {
        var name: String
        var batched = false
        /// Measured only when `--systems` names it: a diagnostic row, not part of the full run.
        var optIn = false
        var make: @Sendable (_ directory: String) -> any StoreSystem
    }

    static let putBatchSize = 100

    /// Durable puts: acknowledged only once on stable storage (except where noted).
    static let syncSystems: [Maker] = [
        Maker(name: "imgstore") { ImgStoreSystem(path: $0, durability: .sync) },
        // The same store with `Configuration.writeMap` (MDB_WRITEMAP; `Environment.write` fallocates 64 MiB past the
        // pages in use before each transaction): what the applier gains from writing LMDB's pages in place instead of
        // malloc, copy and pwrite. Rows run in this order, and under load the later row tends to win (perf-write2.md).
        Maker(name: "imgstore-writemap") {
            ImgStoreSystem(path: $0, configuration: .writeMapped, durability: .sync, name: "imgstore-writemap")
        },
        // imgstore's I/O (log + fdatasync, then LMDB) without its code: the bound of the rows above in this run.
        Maker(name: "log+lmdb-io-bound") { LogThenLMDB(name: "log+lmdb-io-bound", path: $0) },
        // The same bound with its LMDB keys hashed, as imgstore's are: what the order of the keys costs the row.
        Maker(name: "log+lmdb-io-bound-hashed", optIn: true) {
            LogThenLMDB(name: "log+lmdb-io-bound-hashed", path: $0, hashedKeys: true)
        },
        Maker(name: "lmdb-txn-per-put") { RawLMDB(name: "lmdb-txn-per-put", path: $0) },
        Maker(name: "lmdb-batched", batched: true) { RawLMDB(name: "lmdb-batched", path: $0) },
        Maker(name: "lmdb-batched-writemap", batched: true) {
            RawLMDB(name: "lmdb-batched-writemap", path: $0, writeMap: true)
        },
        Maker(name: "sqlite-full") { SQLiteBlobs(name: "sqlite-full", path: $0, synchronous: "FULL") },
        Maker(name: "files-fsync") { FilesPerEntry(name: "files-fsync", path: $0, sync: true) },
    ]

    /// Puts that survive a process crash at best, for throughput: imgstore's batched durability (synced within
    /// 100 ms), LMDB batched, SQLite `synchronous=NORMAL`, files without fsync.
    static let batchedSystems: [Maker] = [
        Maker(name: "imgstore") {
            ImgStoreSystem(path: $0, durability: .batched(within: Durability.defaultBatchWindow))
        },
        Maker(name: "lmdb-batched", batched: true) { RawLMDB(name: "lmdb-batched", path: $0) },
        Maker(name: "lmdb-batched-writemap", batched: true) {
            RawLMDB(name: "lmdb-batched-writemap", path: $0, writeMap: true)
        },
        Maker(name: "sqlite-normal") { SQLiteBlobs(name: "sqlite-normal", path: $0, synchronous: "NORMAL") },
        Maker(name: "files-nosync") { FilesPerEntry(name: "files-nosync", path: $0, sync: false) },
    ]

    // MARK: - Puts

    /// Every image of the workload put once, spread over `threads` threads (thread t puts images t, t+threads, …), into
    /// a fresh system per measurement. The timed span ends when `finish` returns: for imgstore, when the log is applied
    /// to LMDB (a sustained rate, not the log's burst rate).
    ///
    /// Each system is measured `options.repetitions` times and its median run kept, in rotating rounds
    /// (`BenchmarkRunner.medianOfRotatingRounds`). Not the fastest, as elsewhere: the fastest of three took chance
    /// outliers (files-fsync at 16 threads: 1910, 1927 and 3964 puts/s in one run).
    static func puts(
        _ name: String, small: Bool, systems: [Maker], threadCounts: [Int] = [1, 4, 16], _ options: BenchmarkOptions
    ) -> [Measurement] {
        let set = small ? Workloads.small(options) : Workloads.mix(options)
        let makers = systems.filter { options.putSystems?.contains($0.name) ?? !$0.optIn }
        var results: [Measurement] = []
        for threads in options.putThreadCounts ?? threadCounts {
            results += BenchmarkRunner.medianOfRotatingRounds(
                "\(name) \(threads) threads", systems: makers, named: \.name, rounds: options.repetitions
            ) { maker in putOnce(name, set: set, maker: maker, threads: threads, options) }
        }
        return results
    }

    /// One timed run of `set` put into a fresh `maker` system by `threads` threads.
    private static func putOnce(
        _ name: String, set: ImageSet, maker: Maker, threads: Int, _ options: BenchmarkOptions
    ) -> Measurement {
        let directory = options.scratch("\(name)-\(maker.name)-\(threads)")
        let system = maker.make(directory)
        let perThread = set.count / threads
        let batch = maker.batched ? putBatchSize : 1
        var m = BenchmarkRunner.measureOnce(
            name, system: maker.name, threads: threads, opsPerThread: perThread, batch: batch, warmUp: false,
            batchLatency: maker.batched, finish: { system.finish() }
        ) { t, range in
            let indices = range.map { $0 * threads + t }
            if maker.batched {
                let urls = indices.map { set.urls[$0] }, images = indices.map { set.images[$0] }
                system.putBatch(urls[...], images[...], thread: t)
            } else {
                for i in indices { system.put(set.urls[i], set.images[i], thread: t) }
            }
            return indices.reduce(0) { $0 + set.images[$1].count }
        }
        m.system = maker.name
        system.close()
        options.removeScratch(directory)
        return m
    }

    // MARK: - Gets

    /// Lookups of a few hot images, again and again: what a memory tier serves. NSCache holds the same images with the
    /// memory tier's cost limit; raw LMDB (from the page cache) is there for context.
    static func memoryHits(_ options: BenchmarkOptions) -> [Measurement] {
        let fixture = ReadFixture.shared(options)
        let ops = options.ops(200_000)
        return [1, 2].flatMap { threads in
            ([fixture.imgstore, fixture.nscache, fixture.lmdb] as [any StoreSystem]).map { system in
                BenchmarkRunner.measure(
                    "get.memory-hit", system: system.name, threads: threads, opsPerThread: ops,
                    repetitions: options.repetitions, body: memoryHitLoop(fixture, system))
            }
        }
    }

    /// The hot images read in turn (thread t starts at hot image 7t).
    static func memoryHitLoop(_ fixture: ReadFixture, _ system: any StoreSystem) -> @Sendable (Int, Range<Int>) -> Int {
        let hot = fixture.hotKeys
        return { t, range in
            var bytes = 0
            for i in range { bytes &+= system.get(fixture.set.urls[hot[(i &+ t &* 7) % hot.count]], thread: t)?.count ?? 0 }
            return bytes
        }
    }

    /// Uniformly random lookups over the whole data set, page cache warm: imgstore verifies each checksum.
    static func diskHits(_ options: BenchmarkOptions) -> [Measurement] {
        let fixture = ReadFixture.shared(options)
        let ops = options.ops(20_000)
        return [1, 2].flatMap { threads in
            (fixture.diskSystems + [fixture.borrowed] + fixture.readBounds).map { system in
                BenchmarkRunner.measure(
                    "get.disk-hit", system: system.name, threads: threads, opsPerThread: ops, batch: 1,
                    repetitions: options.repetitions, body: diskHitLoop(fixture, system))
            }
        }
    }

    /// Uniformly random entries of the data set (a fixed trace; thread t starts 30 011 entries further on).
    static func diskHitLoop(_ fixture: ReadFixture, _ system: any StoreSystem) -> @Sendable (Int, Range<Int>) -> Int {
        let trace = uniformTrace(keys: fixture.set.count, count: 1 << 16, seed: 11)
        return { t, range in
            var bytes = 0
            for i in range {
                let key = trace[(i &+ t &* 30_011) & (trace.count - 1)]
                guard let count = system.readBytes(fixture.set.urls[key], thread: t) else {
                    fail("\(system.name): \(fixture.set.urls[key]) missing")
                }
                bytes &+= count
            }
            return bytes
        }
    }

    /// Lookups of URLs never stored.
    static func misses(_ options: BenchmarkOptions) -> [Measurement] {
        let fixture = ReadFixture.shared(options)
        let urls = (0..<4096).map { "https://cdn.example.com/img/missing-\($0).jpg" }
        let ops = options.ops(200_000)
        return [1, 2].flatMap { threads in
            (fixture.diskSystems + [fixture.nscache]).map { system in
                BenchmarkRunner.measure(
                    "get.miss", system: system.name, threads: threads, opsPerThread: ops, batch: 10,
                    repetitions: options.repetitions
                ) { t, range in
                    for i in range where system.get(urls[(i &+ t &* 977) & 4095], thread: t) != nil {
                        fail("\(system.name): a missing URL was found")
                    }
                    return 0
                }
            }
        }
    }
}

/// The stores the get cases read: every system filled once with the default workload (imgstore without per-put sync,
/// then settled and checkpointed, so reads come from LMDB), every entry read once to warm the page cache.
final class ReadFixture: Sendable {
    let set: ImageSet
    let imgstore: ImgStoreSystem
    let lmdb: RawLMDB
    let sqlite: SQLiteBlobs
    let files: FilesPerEntry
    let nscache: NSCacheSystem
    /// `imgstore` read through `withImage(for:)`, for `get.disk-hit` only.
    let borrowed: BorrowedImgStore
    /// `lmdb` plus a read's checksum work, hashed in place and with the verified copy: the bounds of the
    /// `get.disk-hit` rows of `borrowed` and `imgstore` against `lmdb`, for `get.disk-hit` only.
    let readBounds: [VerifiedLMDB]
    /// The hot images of `get.memory-hit`: the first 32, about 5 MB, far below any memory tier limit.
    let hotKeys: [Int]
    var diskSystems: [any StoreSystem] { [imgstore, lmdb, sqlite, files] }

    private static let instance = Mutex<ReadFixture?>(nil)

    static func shared(_ options: BenchmarkOptions) -> ReadFixture {
        instance.withLock { fixture in
            if let fixture { return fixture }
            let made = ReadFixture(options)
            fixture = made
            return made
        }
    }

    private init(_ options: BenchmarkOptions) {
        set = Workloads.mix(options)
        FileHandle.standardError.write(Data("  filling the read fixtures (\(set.count) images)…\n".utf8))
        let root = options.scratch("reads")
        imgstore = ImgStoreSystem(path: root + "/imgstore", durability: .background)
        lmdb = RawLMDB(name: "lmdb", path: root + "/lmdb")
        sqlite = SQLiteBlobs(name: "sqlite", path: root + "/sqlite", synchronous: "NORMAL")
        files = FilesPerEntry(name: "files", path: root + "/files", sync: false)
        nscache = NSCacheSystem(costLimit: MemoryTierLimit.bytes)
        borrowed = BorrowedImgStore(imgstore)
        readBounds = [VerifiedLMDB(lmdb, .hashInPlace), VerifiedLMDB(lmdb, .verifiedCopy)]
        hotKeys = Array(0..<min(32, set.count))
        for system in [imgstore, lmdb, sqlite, files] as [any StoreSystem] {
            stride(from: 0, to: set.count, by: StoreCases.putBatchSize).forEach { start in
                let end = min(start + StoreCases.putBatchSize, set.count)
                system.putBatch(set.urls[start..<end], set.images[start..<end], thread: 0)
            }
            system.finish()
        }
        do { try imgstore.store.checkpoint() } catch { fail("checkpoint: \(error)") }
        for key in hotKeys { nscache.put(set.urls[key], set.images[key], thread: 0) }
        for system in diskSystems {
            for url in set.urls where system.get(url, thread: 0) == nil { fail("\(system.name): \(url) not stored") }
        }
    }
}

/// The workloads, made once per run and shared by the cases.
enum Workloads {
    private static let made = Mutex<[String: ImageSet]>([:])

    /// The default image mix, `options.datasetBytes` in all.
    static func mix(_ options: BenchmarkOptions) -> ImageSet {
        cached("mix") { ImageSet.make(bytes: options.datasetBytes, minimumCount: 64) }
    }

    /// 4–16 KiB images: as many as the mix has, at least 256 (so 16 threads have work).
    static func small(_ options: BenchmarkOptions) -> ImageSet {
        let count = max(256, mix(options).count)
        return cached("small") { ImageSet.make(bytes: 0, small: true, minimumCount: count, seed: 43) }
    }

    /// Image bytes held by the workloads made so far.
    static var heldBytes: Int { made.withLock { $0.values.reduce(0) { $0 + $1.totalBytes } } }

    static func cached(_ key: String, _ make: () -> ImageSet) -> ImageSet {
        if let set = made.withLock({ $0[key] }) { return set }
        let set = make()
        made.withLock { $0[key] = set }
        return set
    }
}

/// The memory tier's configured cost limit, for NSCache's limit and the report. Looked up by name in
/// `ImageStore.Configuration` (a stored `Int` property whose name contains "memory"), so it follows the store once the
/// memory tier is integrated; until then MemoryCache's default, 64 MiB.
enum MemoryTierLimit {
    static let found: (label: String, bytes: Int)? = {
        for child in Mirror(reflecting: ImageStore.Configuration()).children {
            if let label = child.label, label.lowercased().contains("memory"), let value = child.value as? Int {
                return (label, value)
            }
        }
        return nil
    }()

    static var bytes: Int { found?.bytes ?? 64 << 20 }

    static var description: String {
        if let found { return "\(found.bytes >> 20) MiB (ImageStore.Configuration.\(found.label))" }
        return "64 MiB (MemoryCache default; ImageStore.Configuration has no memory tier limit yet)"
    }
}
