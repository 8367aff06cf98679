import Foundation
import Locking

/// Skips a tier that keeps failing: after `threshold` consecutive outages it opens for
/// `coolDown`, during which every request is refused without being sent; then it lets one
/// probe through (half-open). The probe's success closes it; its failure opens it again.
///
/// Time is the caller's clock (`now`), so tests move it instead of sleeping.
/// Thread safety: all methods may be called from any thread at once.
package final class CircuitBreaker: Sendable {
    package let threshold: Int
    package let coolDown: Duration
    private let now: @Sendable () -> Date
    private let state = LockedValue(CircuitBreakerState.closed(failures: 0))

    /// - Precondition: `threshold >= 1`, `coolDown > 0` (the configuration checks them).
    package init(threshold: Int, coolDown: Duration, now: @escaping @Sendable () -> Date) {
        precondition(threshold >= 1 && coolDown > .zero, "CircuitBreaker: threshold >= 1 and a positive cool-down")
        self.threshold = threshold
        self.coolDown = coolDown
        self.now = now
    }

    package var current: CircuitBreakerState { state.withLock { $0 } }

    /// Whether a request may be sent now. When the cool-down is over, the first caller gets
    /// true and becomes the probe; it must report back with `succeeded()` or `failed()`.
    package func admit() -> Bool {
        let time = now()
        return state.withLock { state in
            switch state {
            case .closed: return true
            case .halfOpen: return false
            case let .open(until):
                guard time >= until else { return false }
                state = .halfOpen
                return true
            }
        }
    }

    /// The tier answered (a hit, a miss or a refused precondition alike).
    package func succeeded() {
        state.withLock { $0 = .closed(failures: 0) }
    }

    /// The tier failed with an outage (see `SharedTierError.isOutage`).
    package func failed() {
        let reopen = now().addingTimeInterval(coolDown.seconds)
        state.withLock { state in
            switch state {
            case let .closed(failures) where failures + 1 < threshold:
                state = .closed(failures: failures + 1)
            case .closed, .halfOpen:
                state = .open(until: reopen)
            case .open:
                break  // a request admitted before it opened came back late: the cool-down stands
            }
        }
    }
}
