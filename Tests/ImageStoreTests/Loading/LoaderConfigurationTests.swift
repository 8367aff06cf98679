import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Every numeric field of `ImageLoader.Configuration` is range-checked when the loader is
/// made: a bad value is `invalidArgument` naming the field, never a trap later (an infinite
/// `timeout` used to trap in `Task.sleep` on the first download).
@Suite struct LoaderConfigurationTests {
    /// One out-of-range value for one field.
    struct BadValue: Sendable, CustomTestStringConvertible {
        var field: String
        var value: String
        var apply: @Sendable (inout ImageLoader.Configuration) -> Void
        var testDescription: String { "\(field) = \(value)" }
    }

    static let year = ImageStore.Configuration.maxPeriod
    static let century = ImageStore.Configuration.maxLifetime
    static let tick = Duration.nanoseconds(1)

    /// `field` set to `duration`, reported with `duration`'s description.
    static func bad(_ field: String, _ duration: Duration, _ apply: @escaping @Sendable (inout ImageLoader.Configuration, Duration) -> Void) -> BadValue {
        BadValue(field: field, value: "\(duration)") { apply(&$0, duration) }
    }

    static let badValues: [BadValue] = [
        bad("downloadTimeout", .zero) { $0.downloadTimeout = $1 },
        bad("downloadTimeout", .seconds(-1)) { $0.downloadTimeout = $1 },
        bad("downloadTimeout", year + tick) { $0.downloadTimeout = $1 },
        bad("downloadTimeout", .seconds(Int64.max)) { $0.downloadTimeout = $1 },
        BadValue(field: "defaultExpiry", value: "\(Expiry.after(.seconds(-1)))") { $0.defaultExpiry = .after(.seconds(-1)) },
        BadValue(field: "defaultExpiry", value: "\(Expiry.after(.seconds(1e16)))") { $0.defaultExpiry = .after(.seconds(1e16)) },
        BadValue(field: "defaultExpiry", value: "\(Expiry.never)") { $0.defaultExpiry = .never },
        BadValue(field: "defaultExpiry", value: "\(Expiry.storeDefault)") { $0.defaultExpiry = .storeDefault },
        bad("maxLifetime", century + tick) { $0.maxLifetime = $1 },
        bad("maxLifetime", .seconds(Int64.max)) { $0.maxLifetime = $1 },
        bad("maxLifetime", .seconds(-1)) { $0.maxLifetime = $1 },
        bad("minLifetime", .seconds(-1)) { $0.minLifetime = $1 },
        bad("minLifetime", .seconds(7200)) { $0.minLifetime = $1; $0.maxLifetime = .seconds(3600) },
        bad("negativeCacheLifetime", .seconds(-1)) { $0.negativeCacheLifetime = $1 },
        bad("negativeCacheLifetime", century + tick) { $0.negativeCacheLifetime = $1 },
        bad("maxStaleness", .seconds(-1)) { $0.maxStaleness = $1 },
        bad("maxStaleness", .seconds(Int64.min)) { $0.maxStaleness = $1 },
        BadValue(field: "maxConcurrentDownloads", value: "0") { $0.maxConcurrentDownloads = 0 },
        BadValue(field: "maxConcurrentDownloads", value: "-3") { $0.maxConcurrentDownloads = -3 },
    ]

    @Test(arguments: badValues)
    func anOutOfRangeNumberIsATypedErrorNamingTheField(_ bad: BadValue) throws {
        try withTemporaryStore { store throws in
            var configuration = ImageLoader.Configuration()
            bad.apply(&configuration)
            let error = #expect(throws: ImageStoreError.self) {
                _ = try ImageLoader(store: store, configuration: configuration)
            }
            guard case let .invalidArgument(name, value, allowed)? = error else {
                Issue.record("got \(String(describing: error))")
                return
            }
            #expect(name == "ImageLoader.Configuration." + bad.field)
            #expect(value == bad.value)
            #expect(!allowed.isEmpty)
            #expect(error?.description.contains("ImageLoader.Configuration." + bad.field) == true)
        }
    }

    @Test func theDefaultsAndTheEdgesOfEachRangeAreAccepted() throws {
        try withTemporaryStore { store throws in
            _ = try ImageLoader(store: store)
            var edges = ImageLoader.Configuration()
            edges.downloadTimeout = Self.year
            edges.defaultExpiry = .after(.zero)
            edges.maxLifetime = Self.century
            edges.minLifetime = Self.century
            edges.negativeCacheLifetime = .zero
            edges.maxStaleness = .zero
            edges.maxConcurrentDownloads = 1
            _ = try ImageLoader(store: store, configuration: edges)
            edges.downloadTimeout = Self.tick
            edges.defaultExpiry = .after(Self.century)
            edges.negativeCacheLifetime = Self.century
            edges.maxStaleness = Self.century
            edges.minLifetime = .zero
            _ = try ImageLoader(store: store, configuration: edges)
        }
    }
}
