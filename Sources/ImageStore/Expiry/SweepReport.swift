/// What a sweep of expired entries (or a dry run of one) found and removed.
public struct SweepReport: Sendable, Hashable {
    /// Entries removed (or, in a dry run, that would be).
    public var entryCount: Int
    /// Their image bytes.
    public var byteCount: Int
    /// Transactions the sweep used (0 in a dry run).
    public var batches: Int

    public init(entryCount: Int = 0, byteCount: Int = 0, batches: Int = 0) {
        self.entryCount = entryCount
        self.byteCount = byteCount
        self.batches = batches
    }

    @available(*, deprecated, renamed: "init(entryCount:byteCount:batches:)")
    public init(entries: Int, bytes: Int, batches: Int) {
        self.init(entryCount: entries, byteCount: bytes, batches: batches)
    }

    /// The old name of `entryCount`.
    @available(*, deprecated, renamed: "entryCount")
    public var entries: Int {
        get { entryCount }
        set { entryCount = newValue }
    }

    /// The old name of `byteCount`.
    @available(*, deprecated, renamed: "byteCount")
    public var bytes: Int {
        get { byteCount }
        set { byteCount = newValue }
    }
}
