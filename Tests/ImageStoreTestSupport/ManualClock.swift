import Foundation
import Locking
import Synchronization

/// A clock tests move by hand, so expiry is tested without sleeping.
public final class ManualClock: Sendable {
    private let current: LockedValue<Date>

    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = LockedValue(start) }

    public var now: Date { current.withLock { $0 } }

    public func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }

    /// The closure to put in a configuration's `clock`.
    public var source: @Sendable () -> Date { { self.now } }
}
