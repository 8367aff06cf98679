/// What a sweep of expired entries (or a dry run of one) found and removed.
public struct SweepReport: Sendable, Hashable {
    /// Entries removed (or, in a dry run, that would be).
    public var entries: Int
    /// Their image bytes.
    public var bytes: Int
    /// Transactions the sweep used (0 in a dry run).
    public var batches: Int

    public init(entries: Int, bytes: Int, batches: Int) {
        self.entries = entries
        self.bytes = bytes
        self.batches = batches
    }
}
