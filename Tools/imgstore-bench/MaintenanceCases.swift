import Foundation
import ImageStore
import Synchronization

/// Work the store does besides get and put: sweeping expired entries and recovering the write-ahead log on open.
/// imgstore only (the alternatives have no such operation to time: a file-per-entry cache finds what expired by
/// scanning its whole directory).
enum MaintenanceCases {
    static let all: [BenchmarkCase] = [
        BenchmarkCase(name: "expire.sweep") { o in sweeps(o) },
        BenchmarkCase(name: "recover.256MiB") { o in recoveries(o) },
    ]


    // MARK: - Sweeps

    /// A manual clock, so entries expire without waiting.
    final class ManualClock: Sendable {
        let now = Mutex(Date(timeIntervalSince1970: 1_700_000_000))
        func advance(_ seconds: TimeInterval) { now.withLock { $0 += seconds } }
    }

    static let expiredPerSweep = 1_000

    /// Sweeping 1 000 expired entries out of stores of 10 000 and 200 000 entries (1 000 and 5 000 in `--quick`): the
    /// sweep visits the expiry index only, so the two should take about as long. One row per store size; ops are the
    /// entries removed. Each round adds 1 000 entries expiring in a minute, moves the clock two minutes on, sweeps.
    static func sweeps(_ options: BenchmarkOptions) -> [Measurement] {
        let sizes = options.quick ? [1_000, 5_000] : [10_000, 200_000]
        // Small payloads: the sweep's cost is per entry, and 200 000 mix-sized images would take minutes to write.
        let payload = ImageCorpus.ladders[.jpeg]![0]
        return sizes.map { size in
            let clock = ManualClock()
            var configuration = ImageStore.Configuration()
            configuration.clock = { clock.now.withLock { $0 } }
            configuration.sweepPeriod = nil
            configuration.validation = .none
            let directory = options.scratch("expire-\(size)")
            let store: ImageStore
            do { store = try ImageStore(path: directory, configuration: configuration) } catch { fail("\(error)") }
            defer {
                store.close()
                options.removeScratch(directory)
            }
            // `.storeDefault` (`.sync`) is what the deprecated `ttl:` put's `durability: .none` meant here.
            func put(_ key: Int, lifetime: Duration) {
                do { try store.put(payload, for: "https://cdn.example.com/img/\(key).jpg", expiry: .after(lifetime), durability: .storeDefault) }
                catch { fail("expire.sweep put: \(error)") }
            }
            // The store's long-lived entries: a week, the default TTL.
            let fillStart = BenchmarkRunner.nanoseconds()
            for key in 0..<(size - expiredPerSweep) {
                put(key, lifetime: .seconds(7 * 86_400))
                // Settle now and then: filling far ahead of the applier slows puts down more and more (reported).
                if key % 1_000 == 999 { do { _ = try store.statistics() } catch { fail("\(error)") } }
            }
            let fillPut = BenchmarkRunner.nanoseconds()
            do { _ = try store.statistics() } catch { fail("\(error)") }
            FileHandle.standardError.write(Data(String(format: "  filled %d entries: puts %.1f s, applied %.1f s\n", size, Double(fillPut - fillStart) / 1e9, Double(BenchmarkRunner.nanoseconds() - fillPut) / 1e9).utf8))
            var best: Measurement?
            for round in 0..<max(1, options.repetitions) {
                for i in 0..<expiredPerSweep { put(size + round * expiredPerSweep + i, lifetime: .seconds(60)) }
                do { _ = try store.statistics() } catch { fail("\(error)") }
                clock.advance(120)
                let t0 = BenchmarkRunner.nanoseconds()
                let report: SweepReport
                do { report = try store.sweepExpired() } catch { fail("expire.sweep: \(error)") }
                let ns = Double(BenchmarkRunner.nanoseconds() - t0)
                if report.entryCount != expiredPerSweep {
                    fail("expire.sweep removed \(report.entryCount) entries, expected \(expiredPerSweep)")
                }
                let m = Measurement(
                    caseName: "expire.sweep", system: "imgstore \(size / 1000)k entries", threads: 1,
                    operations: report.entryCount, bytes: report.byteCount, seconds: ns / 1e9,
                    latencies: [ns / Double(report.entryCount)], cpuSeconds: ns / 1e9)
                if best == nil || m.seconds < best!.seconds { best = m }
            }
            return best!
        }
    }

    // MARK: - Recovery

    /// What `recover.256MiB` measures: the default store, the opt-in `writeMap` one, the floor, the floor's
    /// writes alone (no sync), raw LMDB replaying the same images (a reference), and LMDB's fastest load of them,
    /// without and with `MDB_WRITEMAP` (the bound).
    enum RecoverySystem: CaseIterable {
        case imgstore, writeMapped, floor, pageCacheFill, lmdbReplay, appendLoad, appendLoadWriteMapped
    }

    /// `options.widerRounds` rotating rounds of each system (five; one in `--quick`), each system's median kept: one
    /// recovery's time moves with the host's state (how fast new page-cache pages come, how fast the disk takes them)
    /// by 2× and more from one run to the next, and the floor and raw LMDB's replay, measured in the same rounds, move
    /// with it. Each round starts with a different system, so no system is always first after the log is written.
    ///
    /// The page-cache fill shows how fast pages new to the page cache came in the same rounds: recovery writes at
    /// least the log's bytes into such pages. It was meant as an upper bound on recovery, and is not one: since every
    /// row waits before its timing (`settleBeforeTiming`), recovery has run faster than it (170 against 148 MB/s in a
    /// full run). On this VM new pages are what varies (the host takes back pages the guest frees, `page_reporting`,
    /// and gives them again on first touch), so the fill's rate moves several-fold between rounds.
    static func recoveries(_ options: BenchmarkOptions) -> [Measurement] {
        let set = ImageSet.make(bytes: options.quick ? 16 << 20 : 256 << 20, seed: 77)  // made once, for every round
        return BenchmarkRunner.medianOfRotatingRounds(
            "recover.256MiB", systems: RecoverySystem.allCases, named: { "\($0)" }, rounds: options.widerRounds
        ) { system in
            switch system {
            case .imgstore: recovery(options, set: set, reopening: .init())
            case .writeMapped: recovery(options, set: set, reopening: .writeMapped)
            case .floor: copyFloor(options, synced: true)
            case .pageCacheFill: copyFloor(options, synced: false)
            case .lmdbReplay: lmdbReplay(options, set: set)
            case .appendLoad: lmdbAppendLoad(options, set: set, writeMap: false)
            case .appendLoadWriteMapped: lmdbAppendLoad(options, set: set, writeMap: true)
            }
        }
    }

    /// What any recovery of the log costs at least, in the same run: a file of the log's size written and synced (as
    /// the writer's log was, untimed), then read back and written into a new file in 1 MiB steps and synced (timed).
    /// Recovery does that much (it reads the log and writes what it holds into LMDB, synced) and more: it parses and
    /// checks the records and builds LMDB's pages. Its figure moves with the disk's state, as recovery's does.
    /// Unsynced, it is the page-cache fill: the same reads and writes without the `fdatasync`.
    static func copyFloor(_ options: BenchmarkOptions, synced: Bool) -> Measurement {
        let bytes = options.quick ? 16 << 20 : 256 << 20
        let directory = options.scratch("recover-floor")
        defer { options.removeScratch(directory) }
        let chunk = 1 << 20
        var buffer = [UInt8](repeating: 0, count: chunk)
        func open(_ name: String, _ flags: Int32) -> Int32 {
            let fd = Glibc.open(directory + "/" + name, flags | O_CLOEXEC, 0o644)
            if fd < 0 { fail("open \(directory)/\(name): \(String(cString: strerror(errno)))") }
            return fd
        }
        func copy(from source: Int32, to target: Int32) {
            for offset in stride(from: 0, to: bytes, by: chunk) {
                if pread(source, &buffer, chunk, off_t(offset)) != chunk { fail("pread: \(String(cString: strerror(errno)))") }
                if pwrite(target, buffer, chunk, off_t(offset)) != chunk { fail("pwrite: \(String(cString: strerror(errno)))") }
            }
            if synced && fdatasync(target) != 0 { fail("fdatasync: \(String(cString: strerror(errno)))") }
        }
        let log = open("log", O_CREAT | O_RDWR)
        defer { close(log) }
        LogThenLMDB.writeZeros(log, bytes: bytes, path: directory + "/log")
        settleBeforeTiming(options)
        let t0 = BenchmarkRunner.nanoseconds()
        let data = open("data", O_CREAT | O_WRONLY | O_TRUNC)
        copy(from: log, to: data)
        close(data)
        return oneRecovery(synced ? "read+write+fdatasync (floor)" : "read+write (page-cache fill)", bytes: bytes, since: t0)
    }

    /// Raw LMDB replaying the same images, in the same run: a reference for recovery, not a proven bound. Raw LMDB,
    /// opened as imgstore's writer commits between checkpoints (`MDB_NOSYNC`, keys hashed), loads the images from a
    /// file that holds them back to back (written and synced untimed, as the writer's log was). Timed, and overlapped
    /// as recovery overlaps its replay: one thread reads the file in segments of about 64 MiB into two buffers in turn
    /// (uninitialised memory, as recovery's), and the calling thread puts each segment's images in one transaction,
    /// unsynced, as the replay commits; a buffer is read into again only once its segment is committed. LMDB is
    /// synced once at the end, as recovery's checkpoint syncs it. Recovery does that and more (it parses and checks
    /// the records, writes the entry, expiry and access records beside each blob, and retires the log). It is not a bound because
    /// neither its commit size nor its order is shown to be LMDB's fastest: recovery has run faster than it (the
    /// README's runs), and segments of 8 or 16 MiB were not faster.
    static func lmdbReplay(_ options: BenchmarkOptions, set: ImageSet) -> Measurement {
        let directory = options.scratch("recover-lmdb")
        defer { options.removeScratch(directory) }
        let logPath = directory + "/log"
        let log = Glibc.open(logPath, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        if log < 0 { fail("open \(logPath): \(String(cString: strerror(errno)))") }
        defer { close(log) }
        var offset = 0
        for image in set.images {
            let n = image.withUnsafeBytes { pwrite(log, $0.baseAddress, $0.count, off_t(offset)) }
            if n != image.count { fail("pwrite \(logPath): \(String(cString: strerror(errno)))") }
            offset += n
        }
        if fdatasync(log) != 0 { fail("fdatasync \(logPath): \(String(cString: strerror(errno)))") }
        let segments = replaySegments(set)
        let capacity = segments.map(\.bytes).max() ?? 1
        let totalBytes = set.totalBytes

        settleBeforeTiming(options)
        let t0 = BenchmarkRunner.nanoseconds()
        let lmdb = RawLMDB(name: "lmdb replay", path: directory + "/lmdb", noMetaSync: true, noSync: true, hashedKeys: true)
        let buffers = (0..<2).map { _ in ReplayBuffer(malloc(capacity)!) }
        defer { buffers.forEach { free($0.start) } }
        let filled = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
        let reusable = [DispatchSemaphore(value: 1), DispatchSemaphore(value: 1)]
        let reader = Thread {
            for (i, segment) in segments.enumerated() {
                reusable[i % 2].wait()
                let n = pread(log, buffers[i % 2].start, segment.bytes, off_t(segment.offset))
                if n != segment.bytes { fail("pread \(logPath): \(n < 0 ? String(cString: strerror(errno)) : "short read")") }
                filled[i % 2].signal()
            }
        }
        reader.start()
        for (i, segment) in segments.enumerated() {
            filled[i % 2].wait()
            var at = 0
            let images = segment.images.map { index in
                defer { at += set.images[index].count }
                return Data(bytesNoCopy: buffers[i % 2].start + at, count: set.images[index].count, deallocator: .none)
            }
            lmdb.putBatch(set.urls[segment.images], images[...], thread: 0)
            reusable[i % 2].signal()
        }
        lmdb.sync()
        lmdb.close()
        return oneRecovery("lmdb batched replay (reference)", bytes: totalBytes, since: t0)
    }

    /// LMDB loading the same images with a subset of recovery's work, in the same run: the bound of recovery. Raw
    /// LMDB, opened with `MDB_NOSYNC` as imgstore's writer commits between checkpoints (and with `MDB_WRITEMAP` in
    /// the second row), takes the images from memory (no log to read or check), under their hashed keys sorted
    /// beforehand (untimed), with `MDB_APPEND` (pages filled in order, no search of the tree and no page split), in
    /// transactions of at most 64 MiB of images, as recovery's replay commits (`LogApplier.maxBatchBytes`), then
    /// syncs LMDB once, as recovery's checkpoint does. Recovery does all of that and more: it reads and checks the
    /// log, puts in an order it does not choose, writes each entry's records beside its blob, and retires the log. Where the faster of the two rows runs below a rate,
    /// recovery through LMDB does not reach it in that run.
    static func lmdbAppendLoad(_ options: BenchmarkOptions, set: ImageSet, writeMap: Bool) -> Measurement {
        let directory = options.scratch("recover-append")
        defer { options.removeScratch(directory) }
        let order = set.urls.indices.map { (key: FilesPerEntry.hashedName(set.urls[$0]), image: $0) }.sorted { $0.key < $1.key }
        var transactions: [(keys: [String], images: [Data])] = []
        var bytes = 0
        for (key, index) in order {
            let image = set.images[index]
            if transactions.isEmpty || bytes + image.count > 64 << 20 {
                transactions.append(([], []))
                bytes = 0
            }
            transactions[transactions.count - 1].keys.append(key)
            transactions[transactions.count - 1].images.append(image)
            bytes += image.count
        }
        settleBeforeTiming(options)
        let t0 = BenchmarkRunner.nanoseconds()
        let lmdb = RawLMDB(name: "lmdb append load", path: directory + "/lmdb", writeMap: writeMap, noMetaSync: true, noSync: true)
        for transaction in transactions { lmdb.append(keys: transaction.keys, images: transaction.images) }
        lmdb.sync()
        lmdb.close()
        return oneRecovery("lmdb sorted append load\(writeMap ? ", writemap" : "") (bound)", bytes: set.totalBytes, since: t0)
    }

    /// A buffer of `lmdbReplay`, written by its reader thread and read by the committing one in turn (the semaphores
    /// order them), so it may cross threads.
    private struct ReplayBuffer: @unchecked Sendable {
        let start: UnsafeMutableRawPointer
        init(_ start: UnsafeMutableRawPointer) { self.start = start }
    }

    /// Images `images` of a set, lying back to back at `offset` in the replay's file, `bytes` long.
    private typealias ReplaySegment = (images: Range<Int>, offset: Int, bytes: Int)

    /// `set`'s images cut into segments of at most 64 MiB (at least one image each), with where each segment lies in
    /// a file that holds the images back to back.
    private static func replaySegments(_ set: ImageSet) -> [ReplaySegment] {
        let segmentBytes = 64 << 20
        var segments: [ReplaySegment] = []
        var first = 0, offset = 0
        while first < set.count {
            var end = first, bytes = 0
            while end < set.count && (end == first || bytes + set.images[end].count <= segmentBytes) {
                bytes += set.images[end].count
                end += 1
            }
            segments.append((first..<end, offset, bytes))
            first = end
            offset += bytes
        }
        return segments
    }

    /// Waits, untimed, between a `recover.256MiB` row's setup and its timed part (3 s; none in `--quick`), so that
    /// every row starts from the same state of the host's memory.
    ///
    /// On this VM (free page reporting, see `recoveries`) the guest hands pages it has freed for about 2 s back to the
    /// host, and the first touch of such a page costs a host fault. A row whose setup is long (imgstore's: 256 MiB of
    /// synced puts through a store) then starts with that memory given back, and a row whose setup is short (raw
    /// LMDB's replay: one file written) starts with it still mapped: measured without the wait, the same recovery took
    /// 1 308 ms in one round and 354 ms in the next, and raw LMDB's replay ran fast in rounds where imgstore's ran slow.
    /// With the wait, every row that allocates much memory (a recovery and raw LMDB's replay alike) pays for it in
    /// every round.
    static func settleBeforeTiming(_ options: BenchmarkOptions) {
        if !options.quick { Thread.sleep(forTimeInterval: 3) }
    }

    /// A `recover.256MiB` row of one operation that moved `bytes` and began at `start` (`BenchmarkRunner.nanoseconds`).
    private static func oneRecovery(_ system: String, bytes: Int, since start: UInt64) -> Measurement {
        let ns = Double(BenchmarkRunner.nanoseconds() - start)
        return Measurement(
            caseName: "recover.256MiB", system: system, threads: 1, operations: 1, bytes: bytes,
            seconds: ns / 1e9, latencies: [ns], cpuSeconds: ns / 1e9)
    }

    /// Reopening a store whose log holds 256 MiB (16 MiB in `--quick`) of puts never applied to LMDB, as after a crash:
    /// the open replays them into LMDB and checkpoints. The log is written by a store with the applier off
    /// (`applyLog`, a test hook) and then abandoned as a crash would leave it; page cache warm. One operation; MB/s
    /// is the log's image bytes over the open's time.
    static func recovery(_ options: BenchmarkOptions, set: ImageSet, reopening reopenConfiguration: ImageStore.Configuration) -> Measurement {
        let logBytes = set.totalBytes
        let directory = options.scratch("recover")
        defer { options.removeScratch(directory) }
        var configuration = ImageStore.Configuration()
        configuration.applyLog = false
        configuration.maxUnappliedBytes = 2 * logBytes + (64 << 20)
        configuration.sweepPeriod = nil
        do {
            let writer = try ImageStore(path: directory, configuration: configuration)
            BenchmarkRunner.runThreads(4) { t in
                for i in stride(from: t, to: set.count, by: 4) {
                    do { try writer.put(set.images[i], for: set.urls[i], durability: .sync) } catch { fail("\(error)") }
                }
            }
            writer.abandonForTesting()
        } catch { fail("recover: \(error)") }
        settleBeforeTiming(options)
        let t0 = BenchmarkRunner.nanoseconds()
        let store: ImageStore
        do { store = try ImageStore(path: directory, configuration: reopenConfiguration) } catch {
            fail("recover: reopen: \(error)")
        }
        let measurement = oneRecovery(reopenConfiguration.writeMap ? "imgstore-writemap" : "imgstore", bytes: set.totalBytes, since: t0)
        defer { store.close() }
        let entries = (try? store.statistics().entryCount) ?? -1
        if entries != set.count { fail("recover: \(entries) entries after recovery, expected \(set.count)") }
        return measurement
    }
}
