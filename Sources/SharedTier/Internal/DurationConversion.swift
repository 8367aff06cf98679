import Foundation
import ImageStore

/// A `Duration` in milliseconds for messages; seconds come from ImageStore's `Duration.seconds`,
/// the package's one conversion to `TimeInterval`.
extension Duration {
    /// The duration in whole milliseconds (rounded down), for messages.
    var wholeMilliseconds: Int {
        Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000)
    }
}
