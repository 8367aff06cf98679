import Foundation

/// What a circuit breaker is doing (see `SharedTier.Statistics.breaker`).
public enum CircuitBreakerState: Sendable, Equatable, CustomStringConvertible {
    /// Requests go through; `failures` consecutive outages so far.
    case closed(failures: Int)
    /// Requests are skipped until `until`.
    case open(until: Date)
    /// One probe is in flight; the others are skipped until it answers.
    case halfOpen

    public var description: String {
        switch self {
        case let .closed(failures): return failures == 0 ? "closed" : "closed (\(failures) consecutive failures)"
        case let .open(until): return "open until \(until)"
        case .halfOpen: return "half-open (probing)"
        }
    }
}
