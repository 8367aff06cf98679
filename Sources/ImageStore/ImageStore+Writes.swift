import Foundation

/// The checks and record building every write shares, synchronous or `async`: each public
/// write prepares, appends (blocking or suspending), then finishes.
extension ImageStore {
    /// A write checked and ready to log.
    struct PreparedWrite {
        var path: WritePath
        var entry: LogEntry
        var durability: Durability
        /// The entry's metadata after the write; nil for removals.
        var record: EntryRecord?
        /// Counted in `statistics().puts` once logged (a refresh is not).
        var isPut = false
    }

    /// Checks a put and builds its record. `validated` carries facts this store's validator
    /// produced for exactly these bytes (the loader's), so they are not validated twice.
    /// `createdAt` (milliseconds) is the creation time a restored entry keeps; nil for now.
    /// - Throws: everything `put` throws before anything is written.
    func preparePut(_ data: Data, for url: String, expiry: Expiry, validators: CacheValidators,
                    durability: Durability, validated: ValidatedImage? = nil,
                    createdAt: Int64? = nil) throws(ImageStoreError) -> PreparedWrite {
        try checkOpen()
        let writes = try writePath()
        let (normalized, cacheKey) = try keys(for: url)
        guard !data.isEmpty else { throw .emptyData }
        guard data.count <= configuration.maxEntryBytes else {
            throw .entryTooLarge(byteCount: data.count, limit: configuration.maxEntryBytes)
        }
        let facts: ImageFacts?
        if let validated, validated.isVouched(by: self, for: data) {
            facts = validated.facts
        } else {
            facts = try validate(data, url: normalized)
        }
        let now = Self.milliseconds(configuration.clock())
        let lifetime = try policy.expiry(now: now, expiry)
        var record = EntryRecord(
            url: normalized, cacheKey: cacheKey, byteCount: data.count,
            checksum: data.withUnsafeBytes(Checksum.blob), createdAt: createdAt ?? now,
            expiresAt: lifetime.expiresAt, lastAccess: now, facts: facts, validators: validators)
        record.slidingSeconds = lifetime.slidingSeconds
        let write = PreparedWrite(
            path: writes, entry: .put(record, data), durability: try resolved(durability), record: record, isPut: true)
        // The last refusal of bad input: nothing may be evicted before it (or any other) passes.
        try maintenance?.admit(record, blobBytes: data.count)
        try checkWritable(write)
        return write
    }

    /// Checks a refresh and builds its renewal: the entry's record with a new lifetime and
    /// validators, logged without the bytes (`LogEntry.renew`); nil when there is no entry.
    func prepareRefresh(_ url: String, expiry: Expiry, validators: CacheValidators?,
                        durability: Durability) throws(ImageStoreError) -> PreparedWrite? {
        try checkOpen()
        let writes = try writePath()
        guard let current = try image(for: url, allowingStale: true) else { return nil }
        let (normalized, cacheKey) = try keys(for: url)
        let now = Self.milliseconds(configuration.clock())
        let lifetime = try policy.expiry(now: now, expiry)
        var record = EntryRecord(
            url: normalized, cacheKey: cacheKey, byteCount: current.data.count, checksum: current.info.checksum,
            createdAt: Self.milliseconds(current.info.createdAt), expiresAt: lifetime.expiresAt,
            lastAccess: now, facts: current.info.facts, validators: validators ?? current.info.validators)
        record.slidingSeconds = lifetime.slidingSeconds
        // Only the record is logged (a renew record), never the bytes again.
        let write = PreparedWrite(path: writes, entry: .renew(record, bytes: current.data), durability: try resolved(durability), record: record)
        try checkWritable(write)
        return write
    }

    /// Checks a removal; nil when there is no entry to remove.
    func prepareRemove(_ url: String, durability: Durability) throws(ImageStoreError) -> PreparedWrite? {
        try checkOpen()
        let writes = try writePath()
        let cacheKey = try keys(for: url).cacheKey
        maintenance?.enforceBudgetBeforeFirstWrite()
        guard try record(cacheKey: cacheKey) != nil else { return nil }
        try tier.checkWritable(cacheKey: cacheKey, record: nil)
        return PreparedWrite(path: writes, entry: .delete(cacheKey: cacheKey), durability: try resolved(durability), record: nil)
    }

    func prepareRemoveAll(durability: Durability) throws(ImageStoreError) -> PreparedWrite {
        try checkOpen()
        let writes = try writePath()
        maintenance?.enforceBudgetBeforeFirstWrite()
        try tier.checkAcceptingWrites()
        return PreparedWrite(path: writes, entry: .deleteAll, durability: try resolved(durability), record: nil)
    }

    /// Brings a store opened over its disk budget under it (once, before its first write:
    /// `StoreMaintenance.enforceBudgetBeforeFirstWrite`), checks that the tree takes a put's
    /// record where it goes, and forgets the entry's noted access time (the record carries the
    /// new one).
    private func checkWritable(_ write: PreparedWrite) throws(ImageStoreError) {
        maintenance?.enforceBudgetBeforeFirstWrite()
        guard let record = write.record else { return }
        try tier.checkWritable(cacheKey: record.cacheKey, record: record)
        maintenance?.tracker.forget(record.cacheKey)
    }

    /// What a put or refresh returns once its record is logged.
    func finished(_ write: PreparedWrite) -> EntryInfo {
        // Invariant: only puts and refreshes (which carry a record) are finished this way.
        assert(write.record != nil)
        if write.isPut { counters.puts.add(1, ordering: .relaxed) }
        return Self.info(write.record!)
    }
}
