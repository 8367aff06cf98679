import Foundation

/// `URL` forms of the calls that take a URL string: each passes `url.absoluteString`.
extension ImageStore {
    /// `image(for:allowingStale:)` for a `URL`.
    public func image(for url: URL, allowingStale: Bool = false) throws(ImageStoreError) -> StoredImage? {
        try image(for: url.absoluteString, allowingStale: allowingStale)
    }

    /// `info(for:)` for a `URL`.
    public func info(for url: URL) throws(ImageStoreError) -> EntryInfo? { try info(for: url.absoluteString) }

    /// `contains(_:)` for a `URL`.
    public func contains(_ url: URL) throws(ImageStoreError) -> Bool { try contains(url.absoluteString) }

    /// `put(_:for:expiry:validators:durability:)` for a `URL`.
    @discardableResult
    public func put(_ data: Data, for url: URL, expiry: Expiry = .storeDefault, validators: CacheValidators = CacheValidators(),
                    durability: Durability = .storeDefault) throws(ImageStoreError) -> EntryInfo {
        try put(data, for: url.absoluteString, expiry: expiry, validators: validators, durability: durability)
    }

    /// `remove(_:durability:)` for a `URL`.
    @discardableResult
    public func remove(_ url: URL, durability: Durability = .storeDefault) throws(ImageStoreError) -> Bool {
        try remove(url.absoluteString, durability: durability)
    }
}

extension ImageStore.Async {
    /// `put(_:for:expiry:validators:durability:)` for a `URL`.
    @discardableResult
    public func put(_ data: Data, for url: URL, expiry: Expiry = .storeDefault, validators: CacheValidators = CacheValidators(),
                    durability: Durability = .storeDefault) async throws -> EntryInfo {
        try await put(data, for: url.absoluteString, expiry: expiry, validators: validators, durability: durability)
    }

    /// `remove(_:durability:)` for a `URL`.
    @discardableResult
    public func remove(_ url: URL, durability: Durability = .storeDefault) async throws -> Bool {
        try await remove(url.absoluteString, durability: durability)
    }
}
