import Foundation

/// When a put or remove is acknowledged, and so what it survives.
public enum Durability: Sendable, Hashable {
    /// Acknowledged once the log record is on stable storage (`fdatasync`): survives a process
    /// crash and power loss. The default. Concurrent writers share one sync (group commit).
    case sync
    /// Acknowledged once written to the log file (the page cache); synced within `interval`
    /// seconds. Survives a process crash; power loss may lose the last `interval`.
    case batched(interval: TimeInterval)
    /// Acknowledged at once; written and synced in the background within the store's
    /// batching interval. A process crash may lose the last interval too.
    case none

    /// The default interval of `batched`, in seconds.
    public static let defaultBatchInterval: TimeInterval = 0.1
}
