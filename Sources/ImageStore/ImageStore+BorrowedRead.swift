import Foundation

extension ImageStore {
    /// Calls `body` with the metadata and the bytes of the image stored for `url`, without
    /// copying them, and returns what `body` returns; nil (and `body` is not called) when there
    /// is no entry or it expired. For large images a caller writes out (to a file, a socket):
    /// `get(_:)` copies every byte into a `Data` first.
    ///
    /// The bytes are verified against their checksum before `body` sees them. Bytes read from
    /// LMDB are the memory-mapped pages themselves, and `body` runs inside the read transaction
    /// that maps them; bytes the write-ahead log or the memory tier holds are lent the same way.
    ///
    /// - Important: The buffer is valid only while `body` runs. It must not escape: do not
    ///   store it, return it or use it after `body` returns (copy what you need to keep).
    ///
    /// Contract:
    /// - `body` must not call this store: any call traps (a programmer error). The read
    ///   transaction is open while it runs, and a second one on the same thread could deadlock
    ///   against a compaction waiting to swap the data file; a put could wait for the log
    ///   applier behind that compaction. Calling other stores is fine.
    /// - `body` runs on the caller's thread, outside LMDB's fault-guarded calls (CLMDBGuard),
    ///   so the guard never jumps over its frames. Keep it short: an open read transaction
    ///   keeps LMDB from reusing pages freed after it began.
    /// - An entry read from disk is not put into the memory tier (that would copy it).
    /// - A hit, a miss and a corrupt read count in `statistics()` as they do for `get`.
    /// - Throws: `checksumMismatch` when the stored bytes are corrupt (`body` is not called);
    ///   `corruptStore` for a damaged tree; URL errors (`emptyURL`, `malformedURL`,
    ///   `urlTooLong`); `storage`; `closed`; and what `body` throws.
    public func withImage<R>(
        for url: String, _ body: (_ info: EntryInfo, _ bytes: UnsafeRawBufferPointer) throws(ImageStoreError) -> R
    ) throws(ImageStoreError) -> R? {
        try checkOpen()
        let cacheKey = try keys(for: url).cacheKey
        let hash = tier.keyHash(cacheKey)  // once, for the key filter, the memory tier and LMDB
        guard mayHold(hash) else {  // never held: a miss without a lookup (`KeyFilter`)
            counters.count(.miss)
            return nil
        }
        let now = Self.milliseconds(configuration.clock())  // one clock read, as in get
        /// Lends `bytes` to `body` unless `record` expired, marking this thread as borrowing.
        func lend(_ record: EntryRecord, _ bytes: UnsafeRawBufferPointer) throws(ImageStoreError) -> R? {
            guard !isExpired(record, now: now) else { return nil }
            var info = Self.info(record)
            if let expiresAt = effectiveExpiry(record) { info.expiresAt = Self.date(expiresAt) }
            let result = BorrowedRead.lending(self) {
                Result { () throws(ImageStoreError) in try body(info, bytes) }
            }
            if policy.tracksAccess { maintenance?.tracker.touch(cacheKey, at: now) }
            return try result.get()
        }
        /// Lends the bytes of a `Data` the log or the memory tier holds.
        func lend(_ record: EntryRecord, from data: Data) throws(ImageStoreError) -> R? {
            try data.withUnsafeBytes { bytes in Result { () throws(ImageStoreError) in try lend(record, bytes) } }.get()
        }
        let served: R?
        var source = StoreCounters.Read.miss
        do throws(ImageStoreError) {
            switch writes?.index.lookup(cacheKey) ?? .unknown {
            case let .put(record, data):
                source = .pendingLog
                served = try lend(record, from: data)
            case .deleted:
                served = nil
            case .unknown:
                try followWriter()
                if let memory, let hit = memory.entry(cacheKey, hash: hash, at: now), !isExpired(hit.record, now: now) {
                    source = .memory
                    served = try lend(hit.record, from: hit.data)
                } else {
                    source = .disk
                    served = try tier.withBlob(cacheKey: cacheKey, hash: hash, lend) ?? nil
                }
            }
        } catch {
            if case .checksumMismatch = error { counters.corruptReads.add(1, ordering: .relaxed) }
            throw error
        }
        counters.count(served == nil ? .miss : source)
        return served
    }
}

/// Which store's borrowed bytes (`withImage`) the current thread's code runs with, so a call
/// back into that store from inside the borrow traps instead of nesting a read transaction.
///
/// A thread-specific value (pthread key), not a `@TaskLocal`: `withImage`'s body is
/// synchronous and runs on the caller's thread, which is what the hazard is about (two read
/// transactions on one thread), and every store call checks it, so it must be cheap. A task
/// local cost every `get` about 12 ns (`swift_task_localValueGet` and its TLS lookups, in the
/// profile of `imgstore-bench --cases get.memory-hit`); `pthread_getspecific` reads one slot
/// of the thread's key table.
enum BorrowedRead {
    /// The key whose value on a thread is the address of the store lending to it, or nil.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // Fails only when the process ran out of keys (PTHREAD_KEYS_MAX, 1024): nothing to recover.
        let rc = pthread_key_create(&key, nil)
        precondition(rc == 0, "pthread_key_create failed: \(String(cString: strerror(rc)))")
        return key
    }()

    /// Runs `body` with `store` marked as lending to this thread, then restores the mark that
    /// was there before (a borrow from another store may enclose this one).
    static func lending<R>(_ store: ImageStore, _ body: () -> R) -> R {
        let previous = pthread_getspecific(key)
        // Fails only with ENOMEM (glibc allocating the thread's second-level key block): the
        // borrow then runs unmarked, so the check is skipped for it, never a false trap.
        pthread_setspecific(key, Unmanaged.passUnretained(store).toOpaque())
        defer { pthread_setspecific(key, previous) }
        return body()
    }

    /// Traps when `store` is lending bytes to code on this thread (`withImage`'s contract).
    static func checkNotLending(_ store: ImageStore) {
        // Invariant: no store call runs inside its own withImage body, so a thread never holds
        // two read transactions of one environment (ResizeGate's shared side is not reentrant).
        precondition(pthread_getspecific(key) != Unmanaged.passUnretained(store).toOpaque(),
                     "ImageStore was called from inside its own withImage(for:_:) body; copy the bytes out or call it afterwards")
    }
}
