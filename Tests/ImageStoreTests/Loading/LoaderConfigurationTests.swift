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

    static let year: TimeInterval = 365 * 86_400
    static let century = ImageStore.Configuration.maxTTL

    static let badValues: [BadValue] = [
        BadValue(field: "timeout", value: "inf") { $0.timeout = .infinity },
        BadValue(field: "timeout", value: "nan") { $0.timeout = .nan },
        BadValue(field: "timeout", value: "0.0") { $0.timeout = 0 },
        BadValue(field: "timeout", value: "-1.0") { $0.timeout = -1 },
        BadValue(field: "timeout", value: "\(year + 1)") { $0.timeout = year + 1 },
        BadValue(field: "defaultTTL", value: "-1.0") { $0.defaultTTL = -1 },
        BadValue(field: "defaultTTL", value: "inf") { $0.defaultTTL = .infinity },
        BadValue(field: "defaultTTL", value: "nan") { $0.defaultTTL = .nan },
        BadValue(field: "defaultTTL", value: "1e+16") { $0.defaultTTL = 1e16 },
        BadValue(field: "maxTTL", value: "inf") { $0.maxTTL = .infinity },
        BadValue(field: "maxTTL", value: "\(century * 2)") { $0.maxTTL = century * 2 },
        BadValue(field: "minTTL", value: "-1.0") { $0.minTTL = -1 },
        BadValue(field: "minTTL", value: "nan") { $0.minTTL = .nan },
        BadValue(field: "minTTL", value: "7200.0") { $0.minTTL = 7200; $0.maxTTL = 3600 },
        BadValue(field: "negativeTTL", value: "-1.0") { $0.negativeTTL = -1 },
        BadValue(field: "negativeTTL", value: "inf") { $0.negativeTTL = .infinity },
        BadValue(field: "negativeTTL", value: "nan") { $0.negativeTTL = .nan },
        BadValue(field: "maxStaleAge", value: "-1.0") { $0.maxStaleAge = -1 },
        BadValue(field: "maxStaleAge", value: "inf") { $0.maxStaleAge = .infinity },
        BadValue(field: "maxStaleAge", value: "nan") { $0.maxStaleAge = .nan },
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
            edges.timeout = Self.year
            edges.defaultTTL = 0
            edges.maxTTL = Self.century
            edges.minTTL = Self.century
            edges.negativeTTL = 0
            edges.maxStaleAge = 0
            edges.maxConcurrentDownloads = 1
            _ = try ImageLoader(store: store, configuration: edges)
            edges.negativeTTL = Self.century
            edges.maxStaleAge = Self.century
            edges.minTTL = 0
            _ = try ImageLoader(store: store, configuration: edges)
        }
    }
}
