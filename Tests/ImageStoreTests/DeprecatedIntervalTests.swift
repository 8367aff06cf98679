import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// The `TimeInterval` spellings before 0.3 still compile and mean what they meant: each is a
/// view of the `Expiry` or `Duration` that replaced it, and a value out of range (NaN and
/// infinities included) is still a typed error naming the field, never a trap.
@Suite struct DeprecatedIntervalTests {
    // MARK: - Views

    @available(*, deprecated, message: "checks the deprecated TimeInterval views")
    @Test func theStoresTimeIntervalViewsReadAndWriteItsDurations() {
        var configuration = ImageStore.Configuration()
        #expect(configuration.defaultTTL == 7 * 86_400 && configuration.sweepInterval == 60)
        configuration.defaultTTL = 100
        configuration.sweepInterval = 0.5
        #expect(configuration.defaultExpiry == .after(.seconds(100)) && configuration.sweepPeriod == .milliseconds(500))
        configuration.defaultTTL = ImageStore.never
        #expect(configuration.defaultExpiry == .never && configuration.defaultTTL == nil)
        configuration.defaultTTL = 5
        configuration.defaultTTL = nil
        configuration.sweepInterval = nil
        #expect(configuration.defaultExpiry == .never && configuration.sweepPeriod == nil)
        #expect(ImageStore.Configuration.maxTTL == 100 * 365.25 * 86_400 && ImageStore.Configuration.maxInterval == 365 * 86_400)
        #expect(Durability.batched(interval: 0.25) == .batched(within: .milliseconds(250)))
        #expect(Durability.defaultBatchInterval == 0.1)
    }

    @available(*, deprecated, message: "checks the deprecated TimeInterval views")
    @Test func theLoadersTimeIntervalViewsReadAndWriteItsDurations() {
        var configuration = ImageLoader.Configuration()
        #expect(configuration.timeout == 30 && configuration.defaultTTL == 86_400 && configuration.minTTL == 60)
        #expect(configuration.maxTTL == 30 * 86_400 && configuration.negativeTTL == 10 && configuration.maxStaleAge == nil)
        configuration.timeout = 5
        configuration.defaultTTL = 90
        configuration.minTTL = 1.5
        configuration.maxTTL = 3600
        configuration.negativeTTL = 0
        configuration.maxStaleAge = 60
        #expect(configuration.downloadTimeout == .seconds(5) && configuration.defaultExpiry == .after(.seconds(90)))
        #expect(configuration.minLifetime == .milliseconds(1500) && configuration.maxLifetime == .seconds(3600))
        #expect(configuration.negativeCacheLifetime == .zero && configuration.maxStaleness == .seconds(60))
        #expect(ImageLoaderError.timedOut(url: "u", seconds: 2) == .timedOut(url: "u", after: .seconds(2)))
    }

    // MARK: - Out of range through the old names

    @available(*, deprecated, message: "checks the deprecated ttl: parameter")
    @Test(arguments: [1e16, -1, .nan, -.infinity, 100 * 365.25 * 86_400 + 1])
    func aTTLOutOfRangeIsATypedError(ttl: Double) throws {
        try withTemporaryStore { store throws in
            #expect {
                try store.put(Data([1, 2, 3]), for: "https://x.test/a", ttl: ttl)
            } throws: { error in
                guard case .invalidArgument(name: "ttl", _, _)? = error as? ImageStoreError else { return false }
                return true
            }
            #expect(try store.entries().isEmpty)
        }
    }

    @available(*, deprecated, message: "checks the deprecated ttl: parameter")
    @Test func theLongestTTLAndNeverAreAccepted() throws {
        try withTemporaryStore { store throws in
            let longest = try store.put(Data([1]), for: "https://x.test/a", ttl: ImageStore.Configuration.maxTTL)
            #expect(longest.expiresAt != nil)
            #expect(try store.put(Data([1]), for: "https://x.test/b", ttl: ImageStore.never).expiresAt == nil)
            #expect(try store.put(Data([1]), for: "https://x.test/c", ttl: 0).expiresAt != nil)
            #expect(try store.refresh("https://x.test/c", ttl: 60) != nil)
        }
    }

    @available(*, deprecated, message: "checks the deprecated batched(interval:)")
    @Test func aBatchIntervalOutOfRangeIsATypedError() throws {
        try withTemporaryStore { store throws in
            for interval in [0, -1, .nan, .infinity, -.infinity, 1e300] as [Double] {
                #expect(throws: ImageStoreError.self) {
                    try store.put(Data([1]), for: "https://x.test/a", durability: .batched(interval: interval))
                }
            }
            #expect(try store.entries().isEmpty)
        }
    }

    /// Old store field names set to values out of range, each with the field the error names.
    @available(*, deprecated, message: "sets the deprecated TimeInterval views")
    static func breakingStore(_ index: Int, _ configuration: inout ImageStore.Configuration) -> String {
        switch index {
        case 0: configuration.defaultTTL = 1e16; return "defaultExpiry"
        case 1: configuration.defaultTTL = -1; return "defaultExpiry"
        case 2: configuration.defaultTTL = .nan; return "defaultTTL"
        case 3: configuration.defaultTTL = -.infinity; return "defaultTTL"
        case 4: configuration.defaultTTL = 1e300; return "defaultTTL"
        case 5: configuration.sweepInterval = .infinity; return "sweepInterval"
        case 6: configuration.sweepInterval = .nan; return "sweepInterval"
        case 7: configuration.sweepInterval = 0; return "sweepPeriod"
        case 8: configuration.sweepInterval = 1e16; return "sweepPeriod"
        default: configuration.durability = .batched(interval: .infinity); return "durability"
        }
    }

    @available(*, deprecated, message: "sets the deprecated TimeInterval views")
    @Test(arguments: 0...9)
    func anOldStoreFieldOutOfRangeFailsTheOpenNamingTheField(index: Int) throws {
        var configuration = makeConfiguration()
        let field = Self.breakingStore(index, &configuration)
        try ConfigurationValidationTests.expectRefused(configuration, naming: field)
    }

    @available(*, deprecated, message: "sets the deprecated TimeInterval views")
    @Test func aValueNoDurationHoldsIsReportedAsGivenUntilTheFieldIsSetAgain() throws {
        var configuration = makeConfiguration()
        configuration.sweepInterval = .nan
        #expect(configuration.sweepInterval?.isNaN == true)
        try ConfigurationValidationTests.expectRefused(configuration, naming: "sweepInterval")
        configuration.sweepPeriod = .seconds(30)
        #expect(configuration.sweepInterval == 30)
        try withTemporaryStore(configuration) { _ in }
    }

    /// Old loader field names set to values out of range: (field the error names, value it reports).
    @available(*, deprecated, message: "sets the deprecated TimeInterval views")
    static func breakingLoader(_ index: Int, _ configuration: inout ImageLoader.Configuration) -> (String, String?) {
        switch index {
        case 0: configuration.timeout = .infinity; return ("timeout", "inf")
        case 1: configuration.timeout = .nan; return ("timeout", "nan")
        case 2: configuration.timeout = 0; return ("downloadTimeout", nil)
        case 3: configuration.timeout = 365 * 86_400 + 1; return ("downloadTimeout", nil)
        case 4: configuration.defaultTTL = .infinity; return ("defaultTTL", "inf")
        case 5: configuration.defaultTTL = .nan; return ("defaultTTL", "nan")
        case 6: configuration.defaultTTL = 1e16; return ("defaultExpiry", nil)
        case 7: configuration.defaultTTL = -1; return ("defaultExpiry", nil)
        case 8: configuration.maxTTL = .infinity; return ("maxTTL", "inf")
        case 9: configuration.maxTTL = 1e16; return ("maxLifetime", nil)
        case 10: configuration.minTTL = .nan; return ("minTTL", "nan")
        case 11: configuration.minTTL = 7200; configuration.maxTTL = 3600; return ("minLifetime", nil)
        case 12: configuration.negativeTTL = .infinity; return ("negativeTTL", "inf")
        case 13: configuration.negativeTTL = -1; return ("negativeCacheLifetime", nil)
        case 14: configuration.maxStaleAge = .nan; return ("maxStaleAge", "nan")
        default: configuration.maxStaleAge = -1; return ("maxStaleness", nil)
        }
    }

    @available(*, deprecated, message: "sets the deprecated TimeInterval views")
    @Test(arguments: 0...15)
    func anOldLoaderFieldOutOfRangeIsATypedErrorNamingTheField(index: Int) throws {
        try withTemporaryStore { store throws in
            var configuration = ImageLoader.Configuration()
            let (field, value) = Self.breakingLoader(index, &configuration)
            let error = #expect(throws: ImageStoreError.self) {
                _ = try ImageLoader(store: store, configuration: configuration)
            }
            guard case let .invalidArgument(name, reported, _)? = error else {
                Issue.record("got \(String(describing: error))")
                return
            }
            #expect(name == "ImageLoader.Configuration." + field)
            if let value { #expect(reported == value) }
        }
    }
}
