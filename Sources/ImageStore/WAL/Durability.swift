import Foundation

/// When a put or remove is acknowledged, and so what it survives.
///
/// Write calls take a `Durability`, never a `Durability?`: `.storeDefault` names the
/// configuration's choice, so `.background` can never be mistaken for `Optional.none` (the
/// old `.none` case could, and silently meant the configured default).
public enum Durability: Sendable, Hashable {
    /// Acknowledged once the log record is on stable storage (`fdatasync`): survives a process
    /// crash and power loss. The store's default. Concurrent writers share one sync (group commit).
    case sync
    /// Acknowledged once written to the log file (the page cache); synced within `interval`
    /// seconds. Survives a process crash; power loss may lose the last `interval`.
    /// Prefer `batched(within:)`, which takes a `Duration`.
    case batched(interval: TimeInterval)
    /// Acknowledged at once; written and synced in the background within the store's
    /// batching interval. A process crash may lose the last interval too.
    case background
    /// The store's `Configuration.durability`. Not valid as the configuration's own value.
    case storeDefault

    /// `batched`, synced within `interval`.
    public static func batched(within interval: Duration) -> Durability { .batched(interval: interval.seconds) }

    /// The default interval of `batched`, in seconds.
    public static let defaultBatchInterval: TimeInterval = 0.1

    /// The old name of `background`.
    @available(*, deprecated, renamed: "background",
               message: "as a `Durability?` argument `.none` meant nil, the store default; say `.background` or `.storeDefault`")
    public static var none: Durability { .background }
}
