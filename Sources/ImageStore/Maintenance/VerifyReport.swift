/// One problem `ImageStore.verify` found: its kind, what it concerns (an entry's URL, a key, a
/// log segment), a sentence, and whether `--repair` fixed it.
public struct VerifyProblem: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, CaseIterable, Codable {
        /// An entry's metadata record cannot be decoded.
        case malformedRecord = "malformed-record"
        /// An entry has no image bytes.
        case missingBlob = "missing-blob"
        /// Image bytes with no entry.
        case orphanBlob = "orphan-blob"
        /// Bytes that do not match the entry's size or checksum.
        case checksumMismatch = "checksum-mismatch"
        /// Bytes that do not validate as the image they were stored as.
        case invalidImage = "invalid-image"
        /// An entry without its row in the expiry or access index.
        case missingIndexRow = "missing-index-row"
        /// An index row that names no entry, or names it with another time.
        case danglingIndexRow = "dangling-index-row"
        /// A stored counter that does not match the entries.
        case wrongCounter = "wrong-counter"
        /// Damage in the write-ahead log before valid records (data lost in the middle).
        case damagedLog = "damaged-log"
        /// An entry whose key is not the hash of its record's cache key (a damaged URL, say):
        /// no lookup can reach it. Last, so quarantined kinds keep their stored index.
        case wrongKey = "wrong-key"
        /// LMDB's tree is damaged (a page unreadable): repair copies every readable entry into
        /// a fresh data file.
        case damagedTree = "damaged-tree"
    }

    public var kind: Kind
    public var subject: String
    public var detail: String
    public var repaired: Bool

    public var description: String { "\(kind.rawValue): \(subject): \(detail)\(repaired ? " (repaired)" : "")" }
}

/// What `ImageStore.verify` checked and found.
public struct VerifyReport: Sendable, Hashable {
    public var problems: [VerifyProblem]
    /// Entries checked.
    public var entriesChecked: Int
    /// Log segments read.
    public var logSegmentsChecked: Int
    /// Bytes of a torn record at the log's tail (normal after a crash; not a problem).
    public var tornLogBytes: Int

    /// Problems still there (all of them unless repaired).
    public var unrepaired: [VerifyProblem] { problems.filter { !$0.repaired } }

    /// Problems per kind.
    public var countsByKind: [VerifyProblem.Kind: Int] {
        problems.reduce(into: [:]) { $0[$1.kind, default: 0] += 1 }
    }
}
