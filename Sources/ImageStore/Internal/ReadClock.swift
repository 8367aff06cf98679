/// The time of one read: the store's clock, read at most once, and only when something needs
/// it (an expiry check, an access time). A miss needs none, and a clock read was about 3% of
/// one (`imgstore-bench --cases get.miss`, perf).
///
/// Every check of one read sees the same time, as when the clock was read up front.
struct ReadClock {
    // Unowned, not retained: the read that makes a ReadClock holds the store for as long as the
    // clock lives (a local of one call), and a retain here was an atomic write to the store
    // object's reference count, a line every reading thread shares, on every lookup.
    private unowned(unsafe) let store: ImageStore
    private var milliseconds: Int64?

    init(_ store: ImageStore) { self.store = store }

    /// Milliseconds of the store's clock, read on the first call.
    mutating func now() -> Int64 {
        if let milliseconds { return milliseconds }
        let read = ImageStore.milliseconds(store.configuration.clock())
        milliseconds = read
        return read
    }
}
