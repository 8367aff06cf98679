import Foundation

/// The interval settings' names before 0.3, as `TimeInterval` seconds (see CHANGELOG.md): kept
/// so existing configurations compile, each a view of the `Expiry` or `Duration` field that
/// replaced it. A value no `Duration` holds (NaN, an infinite period, beyond ±292 billion
/// years) is kept as given, and validation reports it under the old name when the store or
/// loader is made, never a trap.
protocol DeprecatedIntervalViews {
    /// Values set through a deprecated view that no `Duration` holds, by the view's name.
    var unrepresentable: [String: TimeInterval] { get set }
}

extension DeprecatedIntervalViews {
    /// The view named `name` of `value`: what was set through it if no `Duration` held that,
    /// else `value` in seconds.
    func seconds(_ name: String, _ value: Duration?) -> TimeInterval? {
        unrepresentable[name] ?? value?.seconds
    }

    /// `seconds`, set through the view named `name`, as the `Duration` to store; nil when no
    /// `Duration` holds it, which is then kept for validation to report. (Storing the
    /// `Duration` clears what was kept: each field's `didSet` does.)
    mutating func duration(_ name: String, _ seconds: TimeInterval) -> Duration? {
        guard let duration = Duration(exactlySeconds: seconds) else {
            unrepresentable[name] = seconds
            return nil
        }
        return duration
    }

    /// - Throws: `invalidArgument` naming the first deprecated view set to a value no
    ///   `Duration` holds.
    func checkRepresentable(prefix: String) throws(ImageStoreError) {
        guard let (name, value) = unrepresentable.min(by: { $0.key < $1.key }) else { return }
        throw .invalidArgument(name: prefix + name, value: "\(value)",
                               allowed: "a finite number of seconds in the field's range (set it as a Duration instead)")
    }
}

extension ImageStore.Configuration: DeprecatedIntervalViews {
    /// `maxLifetime` in seconds.
    @available(*, deprecated, renamed: "maxLifetime", message: "use maxLifetime, a Duration")
    public static var maxTTL: TimeInterval { maxLifetime.seconds }
    /// `maxPeriod` in seconds.
    @available(*, deprecated, renamed: "maxPeriod", message: "use maxPeriod, a Duration")
    public static var maxInterval: TimeInterval { maxPeriod.seconds }

    /// `defaultExpiry` in seconds: nil (or infinity, when set) for `.never`.
    @available(*, deprecated, renamed: "defaultExpiry", message: "use defaultExpiry, an Expiry")
    public var defaultTTL: TimeInterval? {
        get {
            switch defaultExpiry {
            case .never: seconds("defaultTTL", nil)
            case let .after(duration): seconds("defaultTTL", duration)
            case .at, .storeDefault: .nan
            }
        }
        set {
            guard let newValue, newValue != .infinity else { defaultExpiry = .never; return }
            if let duration = duration("defaultTTL", newValue) { defaultExpiry = .after(duration) }
        }
    }

    /// `sweepPeriod` in seconds.
    @available(*, deprecated, renamed: "sweepPeriod", message: "use sweepPeriod, a Duration")
    public var sweepInterval: TimeInterval? {
        get { seconds("sweepInterval", sweepPeriod) }
        set {
            guard let newValue else { sweepPeriod = nil; return }
            if let duration = duration("sweepInterval", newValue) { sweepPeriod = duration }
        }
    }
}

extension ImageLoader.Configuration: DeprecatedIntervalViews {
    /// `defaultExpiry`'s duration in seconds.
    @available(*, deprecated, renamed: "defaultExpiry", message: "use defaultExpiry, an Expiry")
    public var defaultTTL: TimeInterval {
        get {
            guard case let .after(duration) = defaultExpiry else { return .nan }
            return seconds("defaultTTL", duration) ?? .nan
        }
        set { if let duration = duration("defaultTTL", newValue) { defaultExpiry = .after(duration) } }
    }
    /// `minLifetime` in seconds.
    @available(*, deprecated, renamed: "minLifetime", message: "use minLifetime, a Duration")
    public var minTTL: TimeInterval {
        get { seconds("minTTL", minLifetime) ?? .nan }
        set { if let duration = duration("minTTL", newValue) { minLifetime = duration } }
    }
    /// `maxLifetime` in seconds.
    @available(*, deprecated, renamed: "maxLifetime", message: "use maxLifetime, a Duration")
    public var maxTTL: TimeInterval {
        get { seconds("maxTTL", maxLifetime) ?? .nan }
        set { if let duration = duration("maxTTL", newValue) { maxLifetime = duration } }
    }
    /// `negativeCacheLifetime` in seconds.
    @available(*, deprecated, renamed: "negativeCacheLifetime", message: "use negativeCacheLifetime, a Duration")
    public var negativeTTL: TimeInterval {
        get { seconds("negativeTTL", negativeCacheLifetime) ?? .nan }
        set { if let duration = duration("negativeTTL", newValue) { negativeCacheLifetime = duration } }
    }
    /// `maxStaleness` in seconds.
    @available(*, deprecated, renamed: "maxStaleness", message: "use maxStaleness, a Duration")
    public var maxStaleAge: TimeInterval? {
        get { seconds("maxStaleAge", maxStaleness) }
        set {
            guard let newValue else { maxStaleness = nil; return }
            if let duration = duration("maxStaleAge", newValue) { maxStaleness = duration }
        }
    }
    /// `downloadTimeout` in seconds.
    @available(*, deprecated, renamed: "downloadTimeout", message: "use downloadTimeout, a Duration")
    public var timeout: TimeInterval {
        get { seconds("timeout", downloadTimeout) ?? .nan }
        set { if let duration = duration("timeout", newValue) { downloadTimeout = duration } }
    }
}
