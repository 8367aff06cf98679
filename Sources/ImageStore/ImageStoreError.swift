import Foundation
import LMDB

/// Everything that can go wrong in an `ImageStore` call. Each case carries the context a user
/// needs, and its `description` is a sentence saying what happened and what to do.
///
/// Bad input is rejected before anything is written, and a failed LMDB transaction is rolled
/// back whole. A write that fails in the write-ahead log (`diskFull`, `logFailed`) has an
/// unknown outcome, as after a failed `fsync` in any database: part or all of its record may
/// have reached the log file, and then the entry is present after the store reopens. Nothing
/// acknowledged is ever lost, and `closed` means the call did nothing.
///
/// ## Typed throws, and why an enum
/// - The synchronous API throws `ImageStoreError` only, as typed throws
///   (`throws(ImageStoreError)`): what can fail is one closed domain, the store (LMDB, the log,
///   the validator and the file system are all mapped into it), so `catch` needs no cast.
/// - The `async` interface (`ImageStore.async`, `ImageLoader.image(for:)`) throws untyped:
///   besides `ImageStoreError` (or `ImageLoaderError`) it throws `CancellationError`, which
///   `catch is CancellationError` must be able to match, as Swift concurrency expects.
/// - The cases will grow. We weighed an open struct with `~=` (swift-system's `Errno`), which
///   lets a new kind of error arrive without breaking anyone's `switch`, against the enum,
///   whose cases carry typed context (paths, limits, offsets) that a `case let` binds. We keep
///   the enum: the context is what makes the errors actionable, and turning it into a struct
///   would break every `case let` in callers. The rule for callers instead: **switch over the
///   cases you handle and end with `default:`**; a new case is listed under "Added errors" in
///   CHANGELOG.md, and only breaks a `switch` without a `default`.
public enum ImageStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    // MARK: Bad input (the store is unchanged)
    /// The URL was the empty string.
    case emptyURL
    /// The URL could not be parsed; `reason` says why.
    case malformedURL(url: String, reason: String)
    /// The URL is longer than `Configuration.maxURLBytes`.
    case urlTooLong(length: Int, limit: Int)
    /// The data to put was empty.
    case emptyData
    /// The data to put is larger than `Configuration.maxEntryBytes`.
    case entryTooLarge(byteCount: Int, limit: Int)
    /// The data failed image validation; `reason` comes from the validator.
    case invalidImage(url: String, reason: String)
    /// A number given to the API (an argument such as `ttl`, or a `Configuration` field) is
    /// out of range; `allowed` says what it must be.
    case invalidArgument(name: String, value: String, allowed: String)

    // MARK: Opening
    /// The store path exists and is not a directory.
    case notADirectory(path: String)
    /// The store directory cannot be created or written.
    case notWritable(path: String, reason: String)
    /// The directory holds something that is not an imgstore store; `found` describes it.
    case notAStore(path: String, found: String)
    /// The store was written by a newer imgstore.
    case newerFormat(path: String, found: UInt32, supported: UInt32)
    /// The store's files are damaged beyond what opening can handle.
    case corruptStore(path: String, detail: String)
    /// This process already has the store open; share that instance instead.
    case alreadyOpen(path: String)

    // MARK: Runtime
    /// A stored blob no longer matches its checksum: it is not served.
    case checksumMismatch(url: String, expected: UInt64, actual: UInt64)
    /// The store reached `Configuration.maxMapSize`; remove entries or raise the limit.
    case storeFull(path: String, limit: Int)
    /// The file system holding the store is full. When a put or remove throws it, the call's
    /// outcome is unknown: the entry may be present after the store reopens.
    case diskFull(path: String)
    /// The file system holding the store has too little room for this write, so it was
    /// refused before anything was logged: `available` bytes free, `needed` for the entry and
    /// the LMDB pages applying it (and the writes logged before it) may take. The store is
    /// unchanged; free space and retry.
    case noRoomForWrite(path: String, needed: Int, available: Int)
    /// The entry cannot fit under the disk budget (`Configuration.maxDiskBytes`, here
    /// `maxDiskBytes`): alone in the store, with the store's own pages, it would take `needed`
    /// bytes of LMDB pages, more than the `limit` eviction brings the store down to
    /// (`diskBudgetLowWatermark` of the budget), so the budget would evict it as soon as it was
    /// applied. Refused before anything was logged or evicted: the store is unchanged.
    case entryOverDiskBudget(byteCount: Int, needed: Int, limit: Int, maxDiskBytes: Int)
    /// The store was closed.
    case closed(path: String)
    /// An I/O or storage-engine error; `detail` names the operation and the system's message.
    case storage(path: String, detail: String)

    // MARK: Write-ahead log
    /// The log has damage followed by valid records: data in the middle was lost. Opening
    /// with `Configuration.salvageDamagedLog` skips the damage and reports it.
    case walCorrupt(path: String, detail: String)
    /// A log write or sync failed, now or earlier; the store refuses writes until reopened
    /// (reads work). The call that first met the failure has an unknown outcome: its entry may
    /// be present after the store reopens.
    case logFailed(path: String, detail: String)
    /// Another process holds the store open for writing.
    case writerLocked(path: String, holder: String)
    /// The store was opened read-only.
    case readOnly(path: String)

    public var description: String {
        switch self {
        case .emptyURL:
            "The URL is empty; pass the image's absolute URL, such as https://cdn.example.com/a.jpg."
        case let .malformedURL(url, reason):
            "The URL \"\(url)\" is malformed: \(reason)."
        case let .urlTooLong(length, limit):
            "The URL is \(length) bytes long, over the limit of \(limit) bytes (Configuration.maxURLBytes)."
        case .emptyData:
            "The image data is empty (0 bytes); an empty download is not an image and is not stored."
        case let .entryTooLarge(byteCount, limit):
            "The image is \(byteCount) bytes, over the limit of \(limit) bytes per entry (Configuration.maxEntryBytes)."
        case let .invalidImage(url, reason):
            "The data for \(url) is not a valid image: \(reason). It was not stored."
        case let .invalidArgument(name, value, allowed):
            "\(name) is \(value), out of range: it must be \(allowed)."
        case let .notADirectory(path):
            "The store path \(path) exists and is not a directory; choose a directory path."
        case let .notWritable(path, reason):
            "The store directory \(path) cannot be used: \(reason). Check its permissions."
        case let .notAStore(path, found):
            "The directory \(path) is not an imgstore store: it holds \(found). Use an empty or new directory."
        case let .newerFormat(path, found, supported):
            "The store at \(path) has format version \(found), newer than this build supports (\(supported)); upgrade imgstore."
        case let .corruptStore(path, detail):
            "The store at \(path) is damaged: \(detail). Run `imgstore-admin verify` or restore it from a copy."
        case let .alreadyOpen(path):
            "The store at \(path) is already open in this process; share that ImageStore instance."
        case let .checksumMismatch(url, expected, actual):
            "The stored bytes of \(url) are corrupt (checksum \(String(actual, radix: 16)), expected \(String(expected, radix: 16))); they were not served."
        case let .storeFull(path, limit):
            "The store at \(path) is full: it reached its maximum map size of \(limit) bytes. Remove entries or raise Configuration.maxMapSize."
        case let .diskFull(path):
            "The disk holding the store at \(path) is full. Free space and retry; the outcome of the write that failed is unknown (the entry may be present after the store reopens), and nothing acknowledged was lost."
        case let .noRoomForWrite(path, needed, available):
            "The disk holding the store at \(path) is full for this write: it has \(available) bytes free and the write needs \(needed) (the entry, and the LMDB pages it and the writes not yet applied may take). Nothing was written; free space (remove or expire entries) and retry."
        case let .entryOverDiskBudget(byteCount, needed, limit, maxDiskBytes):
            "The image is \(byteCount) bytes and would take \(needed) bytes of pages with the store's own, over the \(limit) bytes that a disk budget of \(maxDiskBytes) bytes (Configuration.maxDiskBytes) evicts down to, so it would be evicted at once. Nothing was written or evicted; raise the budget or store a smaller image."
        case let .closed(path):
            "The store at \(path) is closed."
        case let .storage(path, detail):
            "Storage error in \(path): \(detail)."
        case let .walCorrupt(path, detail):
            "The write-ahead log of the store at \(path) is damaged: \(detail). Acknowledged writes after the damage would be lost; open with salvageDamagedLog to skip it, or restore the store."
        case let .logFailed(path, detail):
            "The store at \(path) stopped accepting writes after a log failure (\(detail)); reads still work. Reopen the store to recover. The outcome of the write that met the failure is unknown (the entry may be present after the store reopens); nothing acknowledged was lost."
        case let .writerLocked(path, holder):
            "The store at \(path) is open for writing by another process (\(holder)); open it read-only, or stop that process."
        case let .readOnly(path):
            "The store at \(path) is open read-only; open it without readOnly to write."
        }
    }
}

extension ImageStoreError {
    /// Runs `body` (a rethrowing API wrapped around typed throws) and restores the typed error.
    /// Other errors (LMDB's, the file system's) are mapped as `from` maps them, naming `path`
    /// and `operation`.
    static func rethrowing<R>(path: String, operation: String, _ body: () throws -> R) throws(ImageStoreError) -> R {
        do { return try body() } catch let error as ImageStoreError { throw error } catch {
            throw .from(error, path: path, operation: operation, maxMapSize: 0)
        }
    }

    /// Maps an LMDB failure during `operation` to the case a user can act on.
    static func from(_ error: any Error, path: String, operation: String, maxMapSize: Int) -> ImageStoreError {
        if let error = error as? ImageStoreError { return error }
        guard let error = error as? LMDBError else {
            return .storage(path: path, detail: "\(operation): \(error)")
        }
        if error.meansDamage { return .corruptStore(path: path, detail: "\(operation) failed: \(error)") }
        switch error {
        case .mapFull: return .storeFull(path: path, limit: maxMapSize)
        case .noSpace: return .diskFull(path: path)
        case .mapResized:
            return .storage(path: path, detail: "\(operation) failed: another process, opened with a larger maxMapSize, filled the store past this process's map; reopen the store (it then adopts the larger map) or raise Configuration.maxMapSize to match")
        default: return .storage(path: path, detail: "\(operation) failed: \(error)")
        }
    }
}
