import Foundation
import ImageStore

/// The numeric and enumerated options several commands share, each range-checked so that a
/// bad value is a usage error (64) naming the flag, never a trap further down.
enum Options {
    /// `--ttl SECONDS|never`: `.storeDefault` when absent; SECONDS from 0.001 to 100 years.
    static func expiry(_ arguments: ParsedArguments) throws(CommandFailure) -> Expiry {
        guard let value = arguments.value("--ttl") else { return .storeDefault }
        if value == "never" { return .never }
        let limit = ImageStore.Configuration.maxLifetime.seconds
        return .after(try seconds("--ttl", value, limit: limit, range: "\(Int(limit)) (100 years), or never"))
    }

    /// `--durability sync|batched|none`: `.storeDefault` when absent.
    static func durability(_ arguments: ParsedArguments) throws(CommandFailure) -> Durability {
        switch arguments.value("--durability") {
        case nil: return .storeDefault
        case "sync": return .sync
        case "batched": return .batched(within: Durability.defaultBatchWindow)
        case "none": return .background
        case let other?: throw ArgumentParser.usage("--durability must be sync, batched or none; got '\(other)'")
        }
    }

    /// A number of seconds in `0.001 <= s <= limit`, as a `Duration`, or nil when `option` is absent.
    static func duration(_ option: String, _ arguments: ParsedArguments, limit: Double) throws(CommandFailure) -> Duration? {
        guard let value = arguments.value(option) else { return nil }
        return try seconds(option, value, limit: limit, range: "\(Int(limit))")
    }

    /// The smallest number of seconds any option takes: the store keeps times in whole
    /// milliseconds, so a shorter TTL would expire at once (and a shorter timeout is no wait).
    static let minimumSeconds = 0.001

    /// `value` as a number of seconds from `minimumSeconds` to `limit`, in the syntax
    /// `isDecimal` accepts; `range` ends the message that says what the option takes.
    private static func seconds(_ option: String, _ value: String, limit: Double, range: String) throws(CommandFailure) -> Duration {
        guard isDecimal(value, fraction: true), let seconds = Double(value), seconds > 0, seconds <= limit else {
            throw ArgumentParser.usage("\(option) needs a number of seconds greater than 0 and at most \(range); got '\(value)'")
        }
        guard seconds >= minimumSeconds else {
            throw ArgumentParser.usage("\(option) needs at least \(minimumSeconds) seconds (times are kept in milliseconds); got '\(value)'")
        }
        return .seconds(seconds)
    }

    /// Whether `text` is a plain decimal number: ASCII digits; with `fraction`, optionally
    /// `.` and digits, then optionally `e` or `E`, an optional sign and digits (`5`, `2.25`,
    /// `1.5e3`). No sign in front, no hex, `inf`, `nan`, spaces or `_`: `Double(String)` and
    /// `Int(String)` take some of those (`0x10`, `+5`), and a typo must not become a number.
    static func isDecimal(_ text: String, fraction: Bool) -> Bool {
        var bytes = Substring(text).utf8[...]
        func digits() -> Bool {
            let count = bytes.prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }.count
            bytes = bytes.dropFirst(count)
            return count > 0
        }
        guard digits() else { return false }
        if fraction, bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            guard digits() else { return false }
        }
        if fraction, bytes.first == UInt8(ascii: "e") || bytes.first == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if bytes.first == UInt8(ascii: "+") || bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            guard digits() else { return false }
        }
        return bytes.isEmpty
    }

    /// A whole number in `range`, or nil when `option` is absent.
    static func count(_ option: String, _ arguments: ParsedArguments, in range: ClosedRange<Int>) throws(CommandFailure) -> Int? {
        guard let value = arguments.value(option) else { return nil }
        guard isDecimal(value, fraction: false), let count = Int(value), range.contains(count) else {
            throw ArgumentParser.usage("\(option) needs a whole number from \(range.lowerBound) to \(range.upperBound); got '\(value)'")
        }
        return count
    }

    /// `--max-disk-bytes N`: the disk budget (`Configuration.maxDiskBytes`) a writer opens the
    /// store with, a whole number of bytes greater than 0; nil when absent.
    static func maxDiskBytes(_ arguments: ParsedArguments) throws(CommandFailure) -> Int? {
        guard let value = arguments.value(maxDiskBytesOption.name) else { return nil }
        guard isDecimal(value, fraction: false), let bytes = Int(value), bytes > 0 else {
            throw ArgumentParser.usage("\(maxDiskBytesOption.name) needs a whole number of bytes greater than 0 (at most \(Int.max)); got '\(value)'")
        }
        return bytes
    }

    static let maxDiskBytesOption = OptionSpec(
        name: "--max-disk-bytes", value: "N",
        help: "the disk budget: past N bytes of LMDB pages, evict least recently used entries (down to 90% of N), at once when the store is over it")
    static let ttlOption = OptionSpec(name: "--ttl", value: "SECONDS", help: "seconds until the entry expires, a plain decimal from 0.001 (30, 2.5, 1.5e3), or 'never' (default: the store's, 7 days)")
    static let durabilityOption = OptionSpec(name: "--durability", value: "MODE", help: "sync (default), batched or none: when the put is acknowledged")
}
