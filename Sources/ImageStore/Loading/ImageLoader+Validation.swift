import Foundation

extension ImageLoader.Configuration {
    /// Checks every numeric field, so a bad value is a typed error when the loader is made
    /// rather than a trap later (`Task.sleep` traps on a huge `downloadTimeout`, a lifetime
    /// beyond the store's `maxLifetime` would fail every put).
    ///
    /// Lifetimes (`defaultExpiry`'s, `minLifetime`, `maxLifetime`, `negativeCacheLifetime`,
    /// `maxStaleness`) are from 0 to `ImageStore.Configuration.maxLifetime` (100 years), with
    /// `minLifetime` at most `maxLifetime`; `downloadTimeout` is greater than 0 and at most
    /// `ImageStore.Configuration.maxPeriod` (one year); `maxConcurrentDownloads` is greater than
    /// 0. A deprecated `TimeInterval` view set to NaN or an infinity is reported under its name.
    /// - Throws: `ImageStoreError.invalidArgument` naming the first field out of range.
    func validate() throws(ImageStoreError) {
        func require(_ ok: Bool, _ name: String, _ value: some CustomStringConvertible, _ allowed: String) throws(ImageStoreError) {
            guard ok else {
                throw .invalidArgument(name: "ImageLoader.Configuration." + name, value: "\(value)", allowed: allowed)
            }
        }
        try checkRepresentable(prefix: "ImageLoader.Configuration.")
        let century = ImageStore.Configuration.maxLifetime
        let lifetimes = Duration.zero...century
        let inLifetimes = "from 0 to \(century) (100 years)"
        let year = ImageStore.Configuration.maxPeriod
        try require(downloadTimeout > .zero && downloadTimeout <= year, "downloadTimeout", downloadTimeout,
                    "greater than 0 and at most \(year) (one year)")
        guard case let .after(defaultLifetime) = defaultExpiry else {
            throw .invalidArgument(name: "ImageLoader.Configuration.defaultExpiry", value: "\(defaultExpiry)",
                                   allowed: ".after(a Duration) " + inLifetimes)
        }
        try require(lifetimes.contains(defaultLifetime), "defaultExpiry", "\(defaultExpiry)", ".after(a Duration) " + inLifetimes)
        try require(lifetimes.contains(maxLifetime), "maxLifetime", maxLifetime, inLifetimes)
        try require((.zero...maxLifetime).contains(minLifetime), "minLifetime", minLifetime, "from 0 to maxLifetime (\(maxLifetime))")
        try require(lifetimes.contains(negativeCacheLifetime), "negativeCacheLifetime", negativeCacheLifetime,
                    inLifetimes + "; 0 turns it off")
        if let maxStaleness {
            try require(lifetimes.contains(maxStaleness), "maxStaleness", maxStaleness, inLifetimes + ", or nil for no limit")
        }
        try require(maxConcurrentDownloads > 0, "maxConcurrentDownloads", maxConcurrentDownloads, "greater than 0")
    }

    /// `defaultExpiry`'s duration (validation makes sure it is `.after` one).
    var defaultLifetime: Duration {
        if case let .after(duration) = defaultExpiry { duration } else { .zero }
    }
}
