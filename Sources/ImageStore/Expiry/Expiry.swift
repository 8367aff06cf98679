import Foundation

/// When an entry expires: the one lifetime type of `put`, `refresh`, the store's
/// configuration (`defaultExpiry`) and the loader (`ImageLoader.Configuration.defaultExpiry`).
public enum Expiry: Sendable, Hashable {
    /// Never: the entry stays until removed (or evicted by the disk budget).
    case never
    /// This long after the write (after every read too, with `slidingExpiration`). From zero to
    /// `ImageStore.Configuration.maxTTL` (100 years).
    case after(Duration)
    /// At this moment (an instant in the past expires the entry at once).
    case at(Date)
    /// The store's `Configuration.defaultExpiry`. Not valid as the configuration's own value.
    case storeDefault

    /// The lifetime in seconds from `now` as the expiry policy takes it: nil for the store's
    /// default, infinity for never.
    func seconds(from now: Date) -> TimeInterval? {
        switch self {
        case .never: .infinity
        case let .after(duration): duration.seconds
        case let .at(date): max(0, date.timeIntervalSince(now))
        case .storeDefault: nil
        }
    }
}

extension Duration {
    /// The duration in seconds, as `TimeInterval`: the one conversion the store uses.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
}

extension Duration {
    /// `seconds` as a `Duration`, for the `Duration` views of `TimeInterval` settings: a value
    /// no `Duration` holds (NaN, infinite, beyond ±292 billion years) reads as `.zero` (NaN)
    /// or the nearest end; validation reports such a setting when the store or loader is made.
    static func clamping(seconds: TimeInterval) -> Duration {
        guard !seconds.isNaN else { return .zero }
        guard abs(seconds) < 9e18 else { return .seconds(seconds > 0 ? Int64.max : Int64.min) }
        return .seconds(seconds)
    }
}
