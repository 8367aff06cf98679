import Foundation

/// What `ImageLoader` needs from a store: reads, validation, and three `async` writes.
/// `ImageStore` conforms; a test can conform a small in-memory type to it and hand that to
/// `ImageLoader(store:)`, so code that loads images can be tested without a store on disk.
///
/// The writes are `async` and must not block their thread: the loader calls them from its
/// tasks. `ImageStore` implements them with its `async` interface.
public protocol ImageLoaderStore: Sendable {
    /// The store's configuration: the loader reads its `clock` (for freshness and negative
    /// caching), `maxEntryBytes` (a longer download is aborted) and nothing else.
    var configuration: ImageStore.Configuration { get }

    /// The URL in the store's normal form (the loader coalesces loads by it).
    /// - Throws: the store's URL errors (`emptyURL`, `malformedURL`, `urlTooLong`).
    func normalizedURL(_ url: String) throws(ImageStoreError) -> String

    /// The entry for `url`, expired ones included when `allowingStale`; nil when missing.
    /// Synchronous: a read never waits (see `ImageStore.image(for:allowingStale:)`).
    func image(for url: String, allowingStale: Bool) throws(ImageStoreError) -> StoredImage?

    /// Checks downloaded bytes as the store will want them (once per download).
    /// - Throws: `invalidImage`, `emptyData`.
    func validate(_ data: Data, for url: String) throws(ImageStoreError) -> ValidatedImage

    /// Stores a validated download.
    /// - Throws: `ImageStoreError`, or `CancellationError`.
    func store(_ image: ValidatedImage, for url: String, expiry: Expiry, validators: CacheValidators,
               durability: Durability) async throws -> EntryInfo

    /// Renews an entry's lifetime and validators without new bytes (a `304 Not Modified`);
    /// nil when there is no entry.
    /// - Throws: `ImageStoreError`, or `CancellationError`.
    func renew(_ url: String, expiry: Expiry, validators: CacheValidators,
               durability: Durability) async throws -> EntryInfo?

    /// Removes the entry for `url` (a response that must not be stored replaced it).
    /// - Throws: `ImageStoreError`, or `CancellationError`.
    func forget(_ url: String, durability: Durability) async throws

    /// Hears what went wrong in the loader's background work (a failed prefetch, a removal
    /// that did not happen). `ImageStore` passes it to its `Configuration.eventHandler`; the
    /// default does nothing.
    func report(_ event: StoreEvent)
}

extension ImageLoaderStore {
    public func report(_ event: StoreEvent) {}
}

extension ImageLoaderStore {
    /// The old name of `image(for:allowingStale:)`.
    @available(*, deprecated, renamed: "image(for:allowingStale:)")
    public func get(_ url: String, allowingStale: Bool = false) throws(ImageStoreError) -> StoredImage? {
        try image(for: url, allowingStale: allowingStale)
    }
}

extension ImageStore: ImageLoaderStore {
    /// The URL in the store's normal form, as entries are listed under it.
    /// - Throws: `emptyURL`, `malformedURL`, `urlTooLong`.
    public func normalizedURL(_ url: String) throws(ImageStoreError) -> String { try keys(for: url).url }

    public func report(_ event: StoreEvent) { counters.events.emit(event) }

    public func store(_ image: ValidatedImage, for url: String, expiry: Expiry, validators: CacheValidators,
                      durability: Durability) async throws -> EntryInfo {
        try await async.put(image, for: url, expiry: expiry, validators: validators, durability: durability)
    }

    public func renew(_ url: String, expiry: Expiry, validators: CacheValidators,
                      durability: Durability) async throws -> EntryInfo? {
        try await async.refresh(url, expiry: expiry, validators: validators, durability: durability)
    }

    public func forget(_ url: String, durability: Durability) async throws {
        try await async.remove(url, durability: durability)
    }
}
