import Foundation

/// Putting entries back from a backup (`imgstore-admin import --manifest`): the bytes are
/// checked against the checksum the backup recorded, and the entry keeps the creation time it
/// had. `package`, for the admin tool; a service writes with `put`.
extension ImageStore {
    /// XXH3-64 of `data`: the checksum an entry of exactly these bytes has (`EntryInfo.checksum`,
    /// `ls --json`'s `"checksum"`), so a copy can be checked against a recorded one before it is
    /// put back.
    package static func checksum(of data: Data) -> UInt64 {
        data.withUnsafeBytes(Checksum.blob)
    }

    /// Stores `data` for `url` as `put` does, but with the creation time `createdAt` (rounded to
    /// the store's milliseconds) instead of now: a restored entry keeps the age it had. Its last
    /// access is now. `expiry` as for `put`: `.at(date)` restores a recorded expiry exactly (to
    /// the millisecond), `.never` one that never expires.
    ///
    /// Blocks on I/O like `put`. Nothing is written when it throws before logging.
    /// - Throws: as `put`; also `invalidArgument` naming `createdAt` for a moment no
    ///   millisecond count holds (NaN, infinite, or beyond ±292 million years).
    @discardableResult
    package func restore(_ data: Data, for url: String, createdAt: Date, expiry: Expiry,
                         durability: Durability = .storeDefault) throws(ImageStoreError) -> EntryInfo {
        // To the nearest, not down like the clock: a date read back from a manifest is a whole
        // millisecond held in a `Double`, which may sit a hair below it.
        guard let created = Int64(exactly: (createdAt.timeIntervalSince1970 * 1000).rounded()) else {
            throw .invalidArgument(name: "createdAt", value: "\(createdAt.timeIntervalSince1970)",
                                   allowed: "a moment within ±292 million years of 1970")
        }
        let write = try preparePut(data, for: url, expiry: expiry, validators: CacheValidators(),
                                   durability: durability, createdAt: created)
        try write.path.append(write.entry, durability: write.durability)
        return finished(write)
    }
}
