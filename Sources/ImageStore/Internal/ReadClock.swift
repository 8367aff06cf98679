import Foundation

/// The time of one read: the store's clock, read at most once, and only when something needs
/// it (an expiry check, an access time). A miss needs none, and a clock read was about 3% of
/// one (`imgstore-bench --cases get.miss`, perf).
///
/// Every check of one read sees the same time, as when the clock was read up front.
struct ReadClock {
    // The clock itself, not the store: a closure over the store retained it (an atomic write to
    // a count every reading thread shares) on every lookup, and reading `configuration.clock`
    // through an unowned store copied the whole configuration. The default clock captures
    // nothing, so copying it retains nothing.
    private let clock: @Sendable () -> Date
    private var milliseconds: Int64?

    init(_ clock: @escaping @Sendable () -> Date) { self.clock = clock }

    /// Milliseconds of the clock, read on the first call.
    mutating func now() -> Int64 {
        if let milliseconds { return milliseconds }
        let read = ImageStore.milliseconds(clock())
        milliseconds = read
        return read
    }
}
