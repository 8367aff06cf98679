import Foundation

/// Spellings of the API before 0.3 (see CHANGELOG.md), kept so existing code compiles; each
/// forwards to its replacement.
extension ImageStore {
    /// An entry lifetime meaning "never expires", for the deprecated `ttl:` parameters.
    @available(*, deprecated, message: "use Expiry.never")
    public static let never: TimeInterval = .infinity

    /// The old `put`: `ttl` in seconds (nil: the default, infinity: never), and an optional
    /// durability whose `.none` meant nil, the store's default.
    @available(*, deprecated, renamed: "put(_:for:expiry:validators:durability:)")
    @discardableResult
    public func put(_ data: Data, for url: String, ttl: TimeInterval?, validators: CacheValidators = CacheValidators(),
                    durability: Durability? = nil) throws(ImageStoreError) -> EntryInfo {
        let write = try preparePut(data, for: url, expiry: ExpiryPolicy.expiry(ttl: ttl), validators: validators, durability: durability ?? .storeDefault)
        try write.path.append(write.entry, durability: write.durability)
        return finished(write)
    }

    /// The old `refresh`: `ttl` in seconds (nil: the default, infinity: never).
    @available(*, deprecated, renamed: "refresh(_:expiry:validators:durability:)")
    @discardableResult
    public func refresh(_ url: String, ttl: TimeInterval?, validators: CacheValidators? = nil,
                        durability: Durability? = nil) throws(ImageStoreError) -> EntryInfo? {
        guard let write = try prepareRefresh(url, expiry: ExpiryPolicy.expiry(ttl: ttl), validators: validators,
                                             durability: durability ?? .storeDefault) else { return nil }
        try write.path.append(write.entry, durability: write.durability)
        return finished(write)
    }

    /// The old name of `image(for:allowingStale:)`, named like `info(for:)` now.
    @available(*, deprecated, renamed: "image(for:allowingStale:)")
    public func get(_ url: String, allowingStale: Bool = false) throws(ImageStoreError) -> StoredImage? {
        try image(for: url, allowingStale: allowingStale)
    }
}
