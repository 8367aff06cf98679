import Foundation

/// The time of one read: the store's clock, read at most once, and only when something needs
/// it (an expiry check, an access time). A miss needs none, and a clock read was about 3% of
/// one (`imgstore-bench --cases get.miss`, perf).
///
/// A read's checks see one precise time, read at most once, as when the clock was read up
/// front; or, with the system clock, the kernel's coarse clock, read at most once, where it
/// cannot change the outcome (`isBefore`, `notAfterNow`): 5 ns here against 23 ns for
/// `CLOCK_REALTIME`, which was a seventh of a memory hit. Invariant: the coarse time is never
/// later than the precise one.
struct ReadClock {
    // The clock itself, not the store: a closure over the store retained it (an atomic write to
    // a count every reading thread shares) on every lookup, and reading `configuration.clock`
    // through an unowned store copied the whole configuration. The default clock captures
    // nothing, so copying it retains nothing.
    private let clock: @Sendable () -> Date
    /// The clock is the system's (`Configuration.usesSystemClock`): read it directly.
    private let isSystemClock: Bool
    private var milliseconds: Int64?
    /// `CLOCK_REALTIME_COARSE` in milliseconds, once read.
    private var coarseMilliseconds: Int64?

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

    /// Whether `deadline` (milliseconds of the clock) is after `now()`. Decided by the coarse
    /// clock alone when the deadline is more than `coarseMargin` past it (a 7-day expiry,
    /// nearly always); otherwise by `now()`.
    ///
    /// Invariant: `CLOCK_REALTIME_COARSE` is `CLOCK_REALTIME` as of the kernel's last timekeeping
    /// update, never ahead of it, and behind it by a tick or two (at most 5.8 ms in 400 000
    /// reads here, `Tools/clock-lag/run.sh`; the resolution `clock_getres` gives, 4 ms, is
    /// exceeded). The margin is 170 times that. What it does not cover: whenever the kernel's
    /// timekeeping update stalls for over a second (in the tick after a virtual machine resumes
    /// from a pause, after a checkpoint/restore, in a long interrupts-off stall), an entry that
    /// expired meanwhile may be served as a memory hit until the next update.
    @inline(__always)
    mutating func isBefore(_ deadline: Int64) -> Bool {
        if milliseconds == nil && isSystemClock && deadline > coarse() + Self.coarseMargin { return true }
        return deadline > now()
    }

    /// Milliseconds a deadline must lie past the coarse clock for `isBefore` to trust it.
    static let coarseMargin: Int64 = 1_000

    /// A time no later than `now()`, for checks that may only act on what is surely past (the
    /// memory cache drops an entry expired at this time): the coarse clock when the clock is
    /// the system's and `now()` was not read yet, else `now()`.
    @inline(__always)
    mutating func notAfterNow() -> Int64 {
        if milliseconds == nil && isSystemClock { return coarse() }
        return now()
    }

    /// Whether `now()` has read the clock (tests).
    var hasReadPreciseClock: Bool { milliseconds != nil }

    private mutating func coarse() -> Int64 {
        if let coarseMilliseconds { return coarseMilliseconds }
        #if os(Linux)
        let read = Self.milliseconds(CLOCK_REALTIME_COARSE)
        #else
        let read = Self.systemMilliseconds()  // no coarse wall clock: the precise one is never later
        #endif
        coarseMilliseconds = read
        return read
    }

    /// `ImageStore.milliseconds(Date())` without the `Date`: `CLOCK_REALTIME`, which `Date()`
    /// reads, in whole milliseconds since 1970 by integer arithmetic. About a third of a memory
    /// hit's clock cost was the conversions to and from `Double` seconds since 2001.
    @inline(__always)
    static func systemMilliseconds() -> Int64 { milliseconds(CLOCK_REALTIME) }

    /// Whole milliseconds since 1970 of `clock`, truncated as `ImageStore.milliseconds` does.
    @inline(__always)
    private static func milliseconds(_ clock: clockid_t) -> Int64 {
        var time = timespec()
        // Invariant: both clocks read here always exist, so clock_gettime cannot fail.
        clock_gettime(clock, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}
