import Foundation

/// The lifetime and interval settings as `Expiry` and `Duration`, the types the rest of the API
/// takes. Each is a view of the `TimeInterval` field it names (kept so existing configurations
/// compile; see CHANGELOG.md); validation reports a bad value under that field's name.
extension ImageStore.Configuration {
    /// How long an entry put with `.storeDefault` lives: `.never`, or `.after` a duration up to
    /// `maxTTL`. Default 7 days. (`.at` and `.storeDefault` make no sense here: the store
    /// refuses to open with them, as `invalidArgument` naming `defaultTTL`.)
    public var defaultExpiry: Expiry {
        get {
            guard let defaultTTL, defaultTTL != .infinity else { return .never }
            return .after(.clamping(seconds: defaultTTL))
        }
        set {
            switch newValue {
            case .never: defaultTTL = nil
            case let .after(duration): defaultTTL = duration.seconds
            case .at, .storeDefault: defaultTTL = .nan
            }
        }
    }

    /// How often the background sweeper runs; nil to sweep only on demand. Default 60 s.
    public var sweepPeriod: Duration? {
        get { sweepInterval.map { .clamping(seconds: $0) } }
        set { sweepInterval = newValue?.seconds }
    }
}

extension ImageLoader.Configuration {
    /// The lifetime of a download whose response has no `Cache-Control` lifetime and no
    /// `Expires`: `.after` a duration (clamped to `minLifetime...maxLifetime`). Default one day.
    /// (`.never`, `.at` and `.storeDefault` are refused as `invalidArgument` naming `defaultTTL`.)
    public var defaultExpiry: Expiry {
        get { .after(.clamping(seconds: defaultTTL)) }
        set {
            if case let .after(duration) = newValue { defaultTTL = duration.seconds } else { defaultTTL = .nan }
        }
    }
    /// `minTTL` as a `Duration`.
    public var minLifetime: Duration {
        get { .clamping(seconds: minTTL) }
        set { minTTL = newValue.seconds }
    }
    /// `maxTTL` as a `Duration`.
    public var maxLifetime: Duration {
        get { .clamping(seconds: maxTTL) }
        set { maxTTL = newValue.seconds }
    }
    /// `negativeTTL` as a `Duration`: how long a failed URL is not asked for again.
    public var negativeCacheLifetime: Duration {
        get { .clamping(seconds: negativeTTL) }
        set { negativeTTL = newValue.seconds }
    }
    /// `maxStaleAge` as a `Duration`.
    public var maxStaleness: Duration? {
        get { maxStaleAge.map { .clamping(seconds: $0) } }
        set { maxStaleAge = newValue?.seconds }
    }
    /// `timeout` as a `Duration`: how long one download may take.
    public var downloadTimeout: Duration {
        get { .clamping(seconds: timeout) }
        set { timeout = newValue.seconds }
    }
}
