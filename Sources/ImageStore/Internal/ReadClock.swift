/// The time of one read: the store's clock, read at most once, and only when something needs
/// it (an expiry check, an access time). A miss needs none, and a clock read was about 3% of
/// one (`imgstore-bench --cases get.miss`, perf).
///
/// Every check of one read sees the same time, as when the clock was read up front.
struct ReadClock {
    private var milliseconds: Int64?

    /// Milliseconds of `store`'s clock, read on the first call.
    mutating func now(of store: ImageStore) -> Int64 {
        if let milliseconds { return milliseconds }
        let read = ImageStore.milliseconds(store.configuration.clock())
        milliseconds = read
        return read
    }
}
