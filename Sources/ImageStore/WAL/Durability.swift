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
    /// Acknowledged once written to the log file (the page cache); synced within `within`
    /// (greater than zero, at most `ImageStore.Configuration.maxPeriod`). Survives a process
    /// crash; power loss may lose the last `within`.
    case batched(within: Duration)
    /// Acknowledged at once; written and synced in the background within the store's
    /// batching interval. A process crash may lose the last interval too.
    case background
    /// The store's `Configuration.durability`. Not valid as the configuration's own value.
    case storeDefault

    /// The default interval of `batched`: 100 ms.
    public static let defaultBatchWindow: Duration = .milliseconds(100)

    /// The old `batched`, its interval in seconds. A value no `Duration` holds is given as
    /// one out of range (NaN as zero, infinities as the longest), which validation refuses.
    @available(*, deprecated, renamed: "batched(within:)", message: "use batched(within:), a Duration")
    public static func batched(interval: TimeInterval) -> Durability {
        let within = Duration(exactlySeconds: interval)
            ?? (interval.isNaN ? .zero : .seconds(interval > 0 ? Int64.max : Int64.min))
        return .batched(within: within)
    }

    /// `defaultBatchWindow` in seconds.
    @available(*, deprecated, renamed: "defaultBatchWindow", message: "use defaultBatchWindow, a Duration")
    public static var defaultBatchInterval: TimeInterval { defaultBatchWindow.seconds }

    /// The old name of `background`.
    @available(*, deprecated, renamed: "background",
               message: "as a `Durability?` argument `.none` meant nil, the store default; say `.background` or `.storeDefault`")
    public static var none: Durability { .background }
}
