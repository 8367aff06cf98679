import CLMDB
import Foundation

/// The I/O of imgstore's write path with none of its code, as a bound for its put rows in the same run (not an
/// alternative a service would use). It does what imgstore's disk work needs and nothing else, the way imgstore
/// does it at its best:
/// - the log: each put is queued; a leader takes the queue, writes it with one `pwrite` per image outside the lock,
///   and `fdatasync`s once for all of them (group commit); a put returns once a sync covered it. The log file is
///   preallocated in 64 MiB steps (`posix_fallocate`), as imgstore's segments are, so a sync never records a new
///   size. Its first 64 MiB are zeros written and synced before the row starts: imgstore writes zeros ahead of
///   its log while its syncs are small (`WriteAheadLog+ZeroAhead.swift`), so that a sync changes no extent, and
///   the bound has that for free.
/// - the applier: one thread puts what the log wrote into raw LMDB, one transaction per take, under `MDB_NOSYNC`
///   (as imgstore between checkpoints: the log holds every put since the last one, `LMDB/MetaPages.swift`), gathering
///   as imgstore's applier does (`LogApplier`: up to 10 ms for 8 MiB, unless recent records average 64 KiB or more),
///   and syncing LMDB (`mdb_env_sync(env, 1)`) after each 64 MiB applied, where imgstore's default segment closes
///   and its checkpoint syncs.
///
/// It skips the record framing, URL checks, validation, checksums, indexes, checkpoints and segment rotation:
/// imgstore must do those, so they are its cost above this bound. `finish` waits until LMDB holds every put.
final class LogThenLMDB: StoreSystem, @unchecked Sendable {
    let name: String
    private let lmdb: RawLMDB
    private let log: Int32
    private let logPath: String
    private static let preallocationStep = 64 << 20
    /// Guards the log's state below; writers wait on it for their sync.
    private let logLock = NSCondition()
    // Guarded by `logLock`.
    private var pending: [(url: String, image: Data)] = []
    private var queuedCount = 0
    private var syncedCount = 0
    private var leaderActive = false
    private var written = 0
    private var allocated = 0
    private var syncs = 0
    private var syncSeconds = 0.0
    /// Guards the applier's state below; only the applier waits on it (and `finish`, `close`).
    private let applyLock = NSCondition()
    // Guarded by `applyLock`.
    private var toApply: [(url: String, image: Data)] = []
    private var toApplyBytes = 0
    /// 32 times the mean size of recent images (each new one weighs 1/32), as `LogApplier` keeps it.
    private var recentBytes32 = 0
    private var handed = 0
    private var applied = 0
    private var applies = 0
    /// Threads in `finish`: while any waits, the applier does not gather (as `LogApplier`'s waiters).
    private var finishing = 0
    private var stopping = false
    private var applierDone = false
    /// Bytes applied since LMDB was last synced; the applier's own.
    private var appliedSinceSync = 0
    /// imgstore's default segment: its checkpoint syncs LMDB once per segment written.
    private static let checkpointBytes = 64 << 20

    /// `hashedKeys`: LMDB keys are hashes of the URLs, as imgstore's are (see `RawLMDB.init`).
    init(name: String, path: String, hashedKeys: Bool = false) {
        self.name = name
        lmdb = RawLMDB(name: name, path: path + "/lmdb", noMetaSync: true, noSync: true, hashedKeys: hashedKeys)
        logPath = path + "/log"
        log = open(logPath, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o644)
        if log < 0 { fail("open \(logPath): \(String(cString: strerror(errno)))") }
        Self.writeZeros(log, bytes: Self.preallocationStep, path: logPath)
        allocated = Self.preallocationStep
        FilesPerEntry.syncDirectory(path)
        Thread.detachNewThread { [self] in applyUntilStopped() }
    }

    /// Writes `bytes` of zeros at the start of `fd` and syncs them (also the recovery floor's untimed log).
    static func writeZeros(_ fd: Int32, bytes: Int, path: String) {
        let chunk = [UInt8](repeating: 0, count: 1 << 20)
        var offset = 0
        while offset < bytes {
            let n = chunk.withUnsafeBytes { pwrite(fd, $0.baseAddress, min($0.count, bytes - offset), off_t(offset)) }
            if n <= 0 { fail("pwrite \(path): \(String(cString: strerror(errno)))") }
            offset += n
        }
        if fdatasync(fd) != 0 { fail("fdatasync \(path): \(String(cString: strerror(errno)))") }
    }

    func put(_ url: String, _ data: Data, thread: Int) {
        logLock.lock()
        pending.append((url, data))
        queuedCount += 1
        let mine = queuedCount
        while syncedCount < mine {
            if leaderActive {
                logLock.wait()
                continue
            }
            lead()
        }
        logLock.unlock()
    }

    /// Writes and syncs everything queued, as the log's leader. Called and returns with `logLock` held.
    private func lead() {
        leaderActive = true
        let batch = pending
        pending = []
        var offset = written
        let end = written + batch.reduce(0) { $0 + $1.image.count }
        if end > allocated {
            let step = Self.preallocationStep
            let target = (end + step - 1) / step * step
            if posix_fallocate(log, off_t(allocated), off_t(target - allocated)) != 0 { fail("fallocate \(logPath)") }
            allocated = target
        }
        written = end
        logLock.unlock()
        for (_, image) in batch {
            image.withUnsafeBytes { bytes in
                var done = 0
                while done < bytes.count {
                    let n = pwrite(log, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
                    if n < 0 { fail("pwrite \(logPath): \(String(cString: strerror(errno)))") }
                    done += n
                }
            }
            offset += image.count
        }
        let start = Date()
        if fdatasync(log) != 0 { fail("fdatasync \(logPath): \(String(cString: strerror(errno)))") }
        let seconds = Date().timeIntervalSince(start)
        hand(batch)
        logLock.lock()
        syncs += 1
        syncSeconds += seconds
        syncedCount += batch.count
        leaderActive = false
        logLock.broadcast()
    }

    /// Gives written records to the applier, waking it when it may commit now or when it waits for a first record
    /// to start gathering (as the log wakes `LogApplier` for each written batch). Waking it only to commit left it
    /// asleep until `finish` while small images were put: one LMDB transaction per row, after the clock stopped, so
    /// the bound had none of the commits that imgstore's applier makes during the row.
    private func hand(_ batch: [(url: String, image: Data)]) {
        applyLock.lock()
        let applierWaitsForRecords = toApply.isEmpty
        toApply += batch
        handed += batch.count
        for (_, image) in batch {
            toApplyBytes += image.count
            recentBytes32 += image.count - recentBytes32 / 32
        }
        if shouldCommitNow || applierWaitsForRecords { applyLock.signal() }
        applyLock.unlock()
    }

    /// `LogApplier`'s rule: commit at once with 8 MiB queued, large records, or someone waiting; else gather.
    private var shouldCommitNow: Bool {
        toApplyBytes >= 8 << 20 || recentBytes32 >= 32 * (64 << 10) || stopping || (handed > applied && finishing > 0)
    }

    /// The applier: after gathering (at most 10 ms), takes what is written (`takeBatch`), one LMDB transaction per take.
    private func applyUntilStopped() {
        applyLock.lock()
        while true {
            while toApply.isEmpty && !stopping { applyLock.wait() }
            if toApply.isEmpty && stopping { break }
            let deadline = Date(timeIntervalSinceNow: 0.010)
            while !shouldCommitNow && applyLock.wait(until: deadline) {}
            let batch = takeBatch()
            applyLock.unlock()
            lmdb.putBatch(batch.map(\.url)[...], batch.map(\.image)[...], thread: 0)
            appliedSinceSync += batch.reduce(0) { $0 + $1.image.count }
            if appliedSinceSync >= Self.checkpointBytes {
                lmdb.sync()
                appliedSinceSync = 0
            }
            applyLock.lock()
            applied += batch.count
            applies += 1
            applyLock.broadcast()
        }
        applierDone = true
        applyLock.broadcast()
        applyLock.unlock()
    }

    /// The next transaction's images: all queued, or at most 2 MiB (at least one) while recent images average 64 KiB
    /// or more, as `LogApplier.batchLength` takes them while streaming. Called with `applyLock` held.
    private func takeBatch() -> [(url: String, image: Data)] {
        var count = toApply.count
        if recentBytes32 >= 32 * (64 << 10) {
            var bytes = 0
            count = 0
            while count < toApply.count && (count == 0 || bytes < 2 << 20) {
                bytes += toApply[count].image.count
                count += 1
            }
        }
        let batch = Array(toApply.prefix(count))
        toApply.removeFirst(count)
        toApplyBytes -= batch.reduce(0) { $0 + $1.image.count }
        return batch
    }

    /// Waits until LMDB holds every put, then prints the log's shape to stderr, as imgstore's rows do.
    func finish() {
        logLock.lock()
        let total = queuedCount
        let (syncs, syncSeconds) = (self.syncs, self.syncSeconds)
        logLock.unlock()
        applyLock.lock()
        finishing += 1
        applyLock.broadcast()
        while applied < total { applyLock.wait() }
        finishing -= 1
        let transactions = applies
        applyLock.unlock()
        let line = String(format: "%d log fsyncs of %.0f µs mean, %.1f puts each; %d LMDB transactions",
                          syncs, syncs > 0 ? syncSeconds / Double(syncs) * 1e6 : 0, Double(total) / Double(max(syncs, 1)),
                          transactions)
        FileHandle.standardError.write(Data("    \(name): \(line)\n".utf8))
    }

    func get(_ url: String, thread: Int) -> Data? { lmdb.get(url, thread: thread) }

    func close() {
        applyLock.lock()
        stopping = true
        applyLock.broadcast()
        while !applierDone { applyLock.wait() }
        applyLock.unlock()
        Glibc.close(log)
        lmdb.close()
    }
}
