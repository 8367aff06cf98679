import Foundation

/// The I/O of imgstore's write path with none of its code, as a bound for its put rows in the same run (not an
/// alternative a service would use): each put is appended to one log file and acknowledged once a group commit's
/// `fdatasync` covers it (one syncing thread at a time; the others wait and are covered together), then one
/// background thread applies what has queued up into raw LMDB, one transaction per batch, synced as LMDB commits by
/// default. Every image is written twice, as in imgstore; `finish` waits until LMDB holds every put, as imgstore's
/// sustained rows do. No URL check, validation, checksum, framing, index or admission.
final class LogThenLMDB: StoreSystem, @unchecked Sendable {
    let name: String
    private let lmdb: RawLMDB
    private let log: Int32
    private let logPath: String
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var written = 0
    private var synced = 0
    private var syncing = false
    private var queued: [(url: String, image: Data)] = []
    private var enqueued = 0
    private var applied = 0
    private var stopping = false
    private var applierDone = false
    private var syncs = 0
    private var syncSeconds = 0.0
    private var applies = 0

    init(name: String, path: String) {
        self.name = name
        lmdb = RawLMDB(name: name, path: path + "/lmdb")
        logPath = path + "/log"
        log = open(logPath, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o644)
        if log < 0 { fail("open \(logPath): \(String(cString: strerror(errno)))") }
        FilesPerEntry.syncDirectory(path)
        Thread.detachNewThread { [self] in applyUntilStopped() }
    }

    func put(_ url: String, _ data: Data, thread: Int) {
        condition.lock()
        defer { condition.unlock() }
        // Appends under the lock, in order, as imgstore's leader writes a batch.
        data.withUnsafeBytes { bytes in
            var done = 0
            while done < bytes.count {
                let n = pwrite(log, bytes.baseAddress! + done, bytes.count - done, off_t(written + done))
                if n < 0 { fail("pwrite \(logPath): \(String(cString: strerror(errno)))") }
                done += n
            }
        }
        written += data.count
        let mine = written
        while synced < mine {
            if syncing {
                condition.wait()
                continue
            }
            syncing = true
            let target = written
            condition.unlock()
            let start = Date()
            if fdatasync(log) != 0 { fail("fdatasync \(logPath): \(String(cString: strerror(errno)))") }
            let seconds = Date().timeIntervalSince(start)
            condition.lock()
            syncs += 1
            syncSeconds += seconds
            synced = max(synced, target)
            syncing = false
            condition.broadcast()
        }
        queued.append((url, data))
        enqueued += 1
        condition.broadcast()
    }

    /// The applier: takes everything queued, one LMDB transaction per take.
    private func applyUntilStopped() {
        condition.lock()
        while true {
            while queued.isEmpty && !stopping { condition.wait() }
            if queued.isEmpty && stopping { break }
            let batch = queued
            queued = []
            condition.unlock()
            lmdb.putBatch(batch.map(\.url)[...], batch.map(\.image)[...], thread: 0)
            condition.lock()
            applied += batch.count
            applies += 1
            condition.broadcast()
        }
        applierDone = true
        condition.broadcast()
        condition.unlock()
    }

    /// Waits until LMDB holds every put, then prints the log's shape to stderr, as imgstore's rows do.
    func finish() {
        condition.lock()
        while applied < enqueued { condition.wait() }
        let line = String(format: "%d log fsyncs of %.0f µs mean, %.1f puts each; %d LMDB transactions",
                          syncs, syncs > 0 ? syncSeconds / Double(syncs) * 1e6 : 0, Double(enqueued) / Double(max(syncs, 1)), applies)
        condition.unlock()
        FileHandle.standardError.write(Data("    \(name): \(line)\n".utf8))
    }

    func get(_ url: String, thread: Int) -> Data? { lmdb.get(url, thread: thread) }

    func close() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !applierDone { condition.wait() }
        condition.unlock()
        Glibc.close(log)
        lmdb.close()
    }
}
