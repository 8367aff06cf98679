import Foundation

extension ImageStore {
    /// Opens the store as `init(path:configuration:)` does, without blocking the calling
    /// task's thread: recovery (replaying the log, which takes seconds for a large one) runs on
    /// the store's blocking queue while the task is suspended.
    /// - Throws: what `init(path:configuration:)` throws.
    public static func open(path: String, configuration: Configuration = .init()) async throws(ImageStoreError) -> ImageStore {
        try await Blocking.run { () throws(ImageStoreError) in try ImageStore(path: path, configuration: configuration) }
    }

    /// The store's `async` interface, for Swift concurrency: `try await store.async.put(…)`.
    ///
    /// Every call that can wait has a form here that suspends the task instead of blocking its
    /// thread, so a service on a small cooperative pool (libdispatch's, or one limited with
    /// `LIBDISPATCH_COOPERATIVE_POOL_STRICT=1`) never loses a thread to the store:
    /// - writes (`put`, `refresh`, `remove`, `removeAll`) suspend while they wait for their log
    ///   record to be written or synced, and while back-pressure holds them; they are resumed by
    ///   the log's leader thread (which the store owns and which does the `fdatasync` for them)
    ///   or by the applier as it frees memory;
    /// - long operations (`checkpoint`, `compact`, `close`, `sweepExpired`, `statistics`,
    ///   `verify`, and `ImageStore.open`) run on the store's blocking queue.
    ///
    /// Reads (`get`, `info(for:)`, `contains`, `entries`) have no `async` form: they are
    /// answered from memory, the pending log or one short LMDB read, and never wait for a
    /// writer or for I/O other than a page read, so call them directly.
    ///
    /// Errors are `ImageStoreError`, as in the synchronous API, or `CancellationError`:
    /// - A write whose task is cancelled while back-pressure holds it throws
    ///   `CancellationError` and wrote nothing.
    /// - A write whose task is cancelled while it waits for durability throws
    ///   `CancellationError` at once, but its record is already in the log's queue: it is
    ///   written and synced as usual and **may become durable** (and is visible to reads). Treat
    ///   it as a write whose outcome is unknown, as after `logFailed`: read back, or write again.
    /// - Long operations are not cancellable: they run to completion and return their result.
    public var async: Async { Async(store: self) }

    /// The `async` interface of one store; see `ImageStore.async`.
    public struct Async: Sendable {
        /// The store this interface writes to.
        public let store: ImageStore

        /// `put(_:for:expiry:validators:durability:)`, suspending instead of blocking.
        /// - Throws: `CancellationError` (see `ImageStore.async`), or what the synchronous form throws.
        @discardableResult
        public func put(_ data: Data, for url: String, expiry: Expiry = .storeDefault,
                        validators: CacheValidators = CacheValidators(),
                        durability: Durability = .storeDefault) async throws -> EntryInfo {
            try Task.checkCancellation()
            let write = try store.preparePut(data, for: url, expiry: expiry,
                                             validators: validators, durability: durability)
            try await write.path.appendAsync(write.entry, durability: write.durability)
            return store.finished(write)
        }

        /// Puts bytes this store validated (`ImageStore.validate(_:for:)`) without validating
        /// them again; an image validated elsewhere is validated as usual.
        /// - Throws: as `put(_:for:expiry:validators:durability:)`.
        @discardableResult
        public func put(_ image: ValidatedImage, for url: String, expiry: Expiry = .storeDefault,
                        validators: CacheValidators = CacheValidators(),
                        durability: Durability = .storeDefault) async throws -> EntryInfo {
            try Task.checkCancellation()
            let write = try store.preparePut(image.data, for: url, expiry: expiry,
                                             validators: validators, durability: durability, validated: image)
            try await write.path.appendAsync(write.entry, durability: write.durability)
            return store.finished(write)
        }

        /// `refresh(_:expiry:validators:durability:)`, suspending instead of blocking.
        @discardableResult
        public func refresh(_ url: String, expiry: Expiry, validators: CacheValidators? = nil,
                            durability: Durability = .storeDefault) async throws -> EntryInfo? {
            try Task.checkCancellation()
            guard let write = try store.prepareRefresh(url, expiry: expiry,
                                                       validators: validators, durability: durability) else { return nil }
            try await write.path.appendAsync(write.entry, durability: write.durability)
            return store.finished(write)
        }

        /// `remove(_:durability:)`, suspending instead of blocking.
        @discardableResult
        public func remove(_ url: String, durability: Durability = .storeDefault) async throws -> Bool {
            try Task.checkCancellation()
            guard let write = try store.prepareRemove(url, durability: durability) else { return false }
            try await write.path.appendAsync(write.entry, durability: write.durability)
            store.counters.removes.wrappingAdd(1, ordering: .relaxed)
            return true
        }

        /// `removeAll(durability:)`, suspending instead of blocking.
        public func removeAll(durability: Durability = .storeDefault) async throws {
            try Task.checkCancellation()
            let write = try store.prepareRemoveAll(durability: durability)
            try await write.path.appendAsync(write.entry, durability: write.durability)
        }

        /// `checkpoint()`, on the store's blocking queue.
        public func checkpoint() async throws(ImageStoreError) {
            try await Blocking.run { [store] () throws(ImageStoreError) in try store.checkpoint() }
        }

        /// `compact(_:)`, on the store's blocking queue.
        @discardableResult
        public func compact(_ options: CompactionOptions = CompactionOptions()) async throws(ImageStoreError) -> CompactionReport {
            try await Blocking.run { [store] () throws(ImageStoreError) in try store.compact(options) }
        }

        /// `close()`, on the store's blocking queue: returns once the store is closed.
        public func close() async {
            await Blocking.run { [store] in store.close() }
        }

        /// `sweepExpired(dryRun:)`, on the store's blocking queue.
        @discardableResult
        public func sweepExpired(dryRun: Bool = false) async throws(ImageStoreError) -> SweepReport {
            try await Blocking.run { [store] () throws(ImageStoreError) in try store.sweepExpired(dryRun: dryRun) }
        }

        /// `statistics()`, on the store's blocking queue (it settles the log, an fsync).
        public func statistics() async throws(ImageStoreError) -> StoreStatistics {
            try await Blocking.run { [store] () throws(ImageStoreError) in try store.statistics() }
        }

        /// `verify(_:)`, on the store's blocking queue.
        public func verify(_ options: VerifyOptions = VerifyOptions()) async throws(ImageStoreError) -> VerifyReport {
            try await Blocking.run { [store] () throws(ImageStoreError) in try store.verify(options) }
        }
    }
}
