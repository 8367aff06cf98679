import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How long a response may be served from the store, from its caching headers
/// (RFC 9111 §4.2.1 freshness lifetime, §5.2.2 response directives).
///
/// Precedence: `no-store` (and `private`, for a shared cache) → not stored; `no-cache` →
/// stored already expired, so every load revalidates; `s-maxage` (shared cache only), then
/// `max-age`, then `Expires` − `Date`; then the configured default. The result, minus the
/// response's `Age`, is clamped to `minLifetime...maxLifetime` — except `no-cache`, which is honoured
/// as zero.
struct HTTPFreshness: Equatable {
    /// Whether the response may be stored at all.
    var isStorable: Bool
    /// How long from now until the stored entry expires.
    var lifetime: Duration

    static let doNotStore = HTTPFreshness(isStorable: false, lifetime: .zero)

    init(isStorable: Bool, lifetime: Duration) {
        self.isStorable = isStorable
        self.lifetime = lifetime
    }

    /// The freshness of a response with `headers` received at `now`, under `configuration`.
    init(headers: [String: String], now: Date, configuration: ImageLoader.Configuration) {
        let directives = Self.cacheControl(headers["cache-control"] ?? "")
        if directives["no-store"] != nil || (configuration.isSharedCache && directives["private"] != nil) {
            self = .doNotStore
            return
        }
        // `no-cache` with field names only restricts those fields; we keep no headers, so it
        // is the bare directive that matters.
        if let noCache = directives["no-cache"], noCache == nil {
            self.init(isStorable: true, lifetime: .zero)
            return
        }
        var lifetime: TimeInterval?
        if configuration.isSharedCache, let value = directives["s-maxage"] {
            lifetime = value.flatMap(Self.deltaSeconds) ?? 0
        } else if let value = directives["max-age"] {
            // An invalid max-age is treated as stale (RFC 9111 §4.2.1).
            lifetime = value.flatMap(Self.deltaSeconds) ?? 0
        } else if let expires = headers["expires"] {
            // An invalid Expires (such as "0") means already expired (RFC 9111 §5.3).
            if let expiresAt = Self.httpDate(expires) {
                let base = headers["date"].flatMap(Self.httpDate) ?? now
                lifetime = expiresAt.timeIntervalSince(base)
            } else {
                lifetime = 0
            }
        }
        guard var lifetime else {
            self.init(isStorable: true, lifetime: Self.clamp(configuration.defaultLifetime, configuration))
            return
        }
        if let age = headers["age"].flatMap(Self.deltaSeconds) { lifetime -= age }
        // Finite: delta-seconds are at most 2^31, and HTTP-dates are within years 1–9999.
        self.init(isStorable: true, lifetime: Self.clamp(.seconds(lifetime), configuration))
    }

    /// The response's headers with lowercased names (HTTP field names are case-insensitive).
    static func headers(of response: HTTPURLResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            guard let name = name as? String, let value = value as? String else { continue }
            headers[name.lowercased()] = value
        }
        return headers
    }

    private static func clamp(_ lifetime: Duration, _ configuration: ImageLoader.Configuration) -> Duration {
        min(max(lifetime, configuration.minLifetime), configuration.maxLifetime)
    }

    /// `Cache-Control` as directive name (lowercased) → argument (quotes removed), or nil
    /// for a directive without one.
    static func cacheControl(_ header: String) -> [String: String?] {
        var directives: [String: String?] = [:]
        for part in header.split(separator: ",") {
            let token = part.trimmingCharacters(in: .whitespaces)
            guard !token.isEmpty else { continue }
            if let equals = token.firstIndex(of: "=") {
                let name = token[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
                var value = token[token.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
                // The first occurrence wins; a duplicate is an origin error.
                if directives[name] == nil { directives[name] = .some(value) }
            } else if directives[token.lowercased()] == nil {
                directives[token.lowercased()] = .some(nil)
            }
        }
        return directives
    }

    /// A delta-seconds value (RFC 9111 §1.2.2): digits only.
    static func deltaSeconds(_ text: String) -> TimeInterval? {
        let text = text.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) else { return nil }
        // Values past 2^31 are "infinite" (RFC 9111 §1.2.2).
        return TimeInterval(Int(text.prefix(10)) ?? Int(Int32.max))
    }

    /// An HTTP-date (RFC 9110 §5.6.7): IMF-fixdate, or the obsolete RFC 850 and asctime forms.
    static func httpDate(_ text: String) -> Date? {
        let text = text.trimmingCharacters(in: .whitespaces)
        for format in ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
