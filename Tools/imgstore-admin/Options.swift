import Foundation
import ImageStore

/// The numeric and enumerated options several commands share, each range-checked so that a
/// bad value is a usage error (64) naming the flag, never a trap further down.
enum Options {
    /// `--ttl SECONDS|never`: `.storeDefault` when absent.
    static func expiry(_ arguments: ParsedArguments) throws(CommandFailure) -> Expiry {
        guard let value = arguments.value("--ttl") else { return .storeDefault }
        if value == "never" { return .never }
        let limit = ImageStore.Configuration.maxLifetime.seconds
        guard let seconds = Double(value), seconds > 0, seconds <= limit else {
            throw ArgumentParser.usage("--ttl needs a number of seconds greater than 0 and at most \(Int(limit)) (100 years), or never; got '\(value)'")
        }
        return .after(.seconds(seconds))
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

    /// A number of seconds in `0 < s <= limit`, as a `Duration`, or nil when `option` is absent.
    static func duration(_ option: String, _ arguments: ParsedArguments, limit: Double) throws(CommandFailure) -> Duration? {
        guard let value = arguments.value(option) else { return nil }
        guard let seconds = Double(value), seconds > 0, seconds <= limit else {
            throw ArgumentParser.usage("\(option) needs a number of seconds greater than 0 and at most \(Int(limit)); got '\(value)'")
        }
        return .seconds(seconds)
    }

    /// A whole number in `range`, or nil when `option` is absent.
    static func count(_ option: String, _ arguments: ParsedArguments, in range: ClosedRange<Int>) throws(CommandFailure) -> Int? {
        guard let value = arguments.value(option) else { return nil }
        guard let count = Int(value), range.contains(count) else {
            throw ArgumentParser.usage("\(option) needs a whole number from \(range.lowerBound) to \(range.upperBound); got '\(value)'")
        }
        return count
    }

    /// `--max-disk-bytes N`: the disk budget (`Configuration.maxDiskBytes`) a writer opens the
    /// store with, a whole number of bytes greater than 0; nil when absent.
    static func maxDiskBytes(_ arguments: ParsedArguments) throws(CommandFailure) -> Int? {
        guard let value = arguments.value(maxDiskBytesOption.name) else { return nil }
        guard let bytes = Int(value), bytes > 0 else {
            throw ArgumentParser.usage("\(maxDiskBytesOption.name) needs a whole number of bytes greater than 0 (at most \(Int.max)); got '\(value)'")
        }
        return bytes
    }

    static let maxDiskBytesOption = OptionSpec(
        name: "--max-disk-bytes", value: "N",
        help: "the disk budget: past N bytes of LMDB pages, evict least recently used entries (down to 90% of N), at once when the store is over it")
    static let ttlOption = OptionSpec(name: "--ttl", value: "SECONDS", help: "seconds until the entry expires, or 'never' (default: the store's, 7 days)")
    static let durabilityOption = OptionSpec(name: "--durability", value: "MODE", help: "sync (default), batched or none: when the put is acknowledged")
}
