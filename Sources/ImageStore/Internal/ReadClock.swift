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
    /// The clock is the system's (`Configuration.usesSystemClock`): read it directly.
    private let isSystemClock: Bool
    private var milliseconds: Int64?

    init(_ configuration: ImageStore.Configuration) {
        clock = configuration.clock
        isSystemClock = configuration.usesSystemClock
    }

    /// Milliseconds of the clock, read on the first call.
    mutating func now() -> Int64 {
        if let milliseconds { return milliseconds }
        let read = isSystemClock ? Self.systemMilliseconds() : ImageStore.milliseconds(clock())
        milliseconds = read
        return read
    }

    /// `ImageStore.milliseconds(Date())` without the `Date`: `CLOCK_REALTIME`, which `Date()`
    /// reads, in whole milliseconds since 1970 by integer arithmetic. About a third of a memory
    /// hit's clock cost was the conversions to and from `Double` seconds since 2001.
    @inline(__always)
    static func systemMilliseconds() -> Int64 {
        var time = timespec()
        // Invariant: CLOCK_REALTIME always exists, so clock_gettime cannot fail here.
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}
