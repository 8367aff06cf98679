import Foundation

/// When an entry expires: the one lifetime type of `put`, `refresh`, the store's
/// configuration (`defaultExpiry`) and the loader (`ImageLoader.Configuration.defaultExpiry`).
public enum Expiry: Sendable, Hashable {
    /// Never: the entry stays until removed (or evicted by the disk budget).
    case never
    /// This long after the write (after every read too, with `slidingExpiration`). From zero to
    /// `ImageStore.Configuration.maxLifetime` (100 years).
    case after(Duration)
    /// At this moment (an instant in the past expires the entry at once).
    case at(Date)
    /// The store's `Configuration.defaultExpiry`. Not valid as the configuration's own value.
    case storeDefault
}

extension Duration {
    /// The duration in seconds, as `TimeInterval`: the one conversion to seconds the package
    /// uses (`Date` arithmetic, `URLRequest`, the deprecated views).
    package var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }

    /// The duration in whole milliseconds, rounded to the nearest (the store's timestamps are
    /// milliseconds), saturating at the ends of `Int64`.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds > 0 ? .max : .min }
        let (sum, overflowed) = whole.addingReportingOverflow((attoseconds + 500_000_000_000_000) / 1_000_000_000_000_000)
        return overflowed ? .max : sum
    }

    /// `seconds` as a `Duration`, or nil when no `Duration` holds it: NaN, infinite, or
    /// beyond ±292 billion years (where `Duration.seconds(_:)` would trap).
    init?(exactlySeconds seconds: TimeInterval) {
        guard seconds.isFinite, abs(seconds) < 9e18 else { return nil }
        self = .seconds(seconds)
    }
}
