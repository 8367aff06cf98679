import Foundation

extension ImageLoader.Configuration {
    /// Checks every numeric field, so a bad value is a typed error when the loader is made
    /// rather than a trap later (`Task.sleep` traps on an infinite `timeout`, a lifetime
    /// beyond the store's `maxTTL` would fail every put).
    ///
    /// Lifetimes (`defaultTTL`, `minTTL`, `maxTTL`, `negativeTTL`, `maxStaleAge`) are from 0 to
    /// `ImageStore.Configuration.maxTTL` (100 years), with `minTTL` at most `maxTTL`; `timeout`
    /// is greater than 0 and at most `ImageStore.Configuration.maxInterval` (one year);
    /// `maxConcurrentDownloads` is greater than 0. NaN is never in range.
    /// - Throws: `ImageStoreError.invalidArgument` naming the first field out of range.
    func validate() throws(ImageStoreError) {
        func require(_ ok: Bool, _ name: String, _ value: some CustomStringConvertible, _ allowed: String) throws(ImageStoreError) {
            guard ok else {
                throw .invalidArgument(name: "ImageLoader.Configuration." + name, value: "\(value)", allowed: allowed)
            }
        }
        let century = ImageStore.Configuration.maxTTL
        let lifetimes = 0...century
        let inLifetimes = "from 0 to \(Int(century)) seconds (100 years)"
        let year = ImageStore.Configuration.maxInterval
        try require(timeout > 0 && timeout <= year, "timeout", timeout, "greater than 0 and at most \(Int(year)) seconds")
        try require(lifetimes.contains(defaultTTL), "defaultTTL", defaultTTL, inLifetimes)
        try require(lifetimes.contains(maxTTL), "maxTTL", maxTTL, inLifetimes)
        try require((0...maxTTL).contains(minTTL), "minTTL", minTTL, "from 0 to maxTTL (\(maxTTL)) seconds")
        try require(lifetimes.contains(negativeTTL), "negativeTTL", negativeTTL, inLifetimes + "; 0 turns it off")
        if let maxStaleAge {
            try require(lifetimes.contains(maxStaleAge), "maxStaleAge", maxStaleAge, inLifetimes + ", or nil for no limit")
        }
        try require(maxConcurrentDownloads > 0, "maxConcurrentDownloads", maxConcurrentDownloads, "greater than 0")
    }
}
