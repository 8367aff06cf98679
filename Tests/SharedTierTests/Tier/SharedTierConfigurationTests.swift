import Foundation
import ImageStore
import SharedTier
import SharedTierTestSupport
import Testing

/// Every field of the tier's configuration is range-checked when the tier (or its S3 client) is made: out of range is
/// `invalidConfiguration` naming the field, never a trap later (issue 14 §1). A timeout past the longest period
/// trapped: `Task.sleep(for:)` traps on a duration that does not fit its clock ("Not enough bits to represent the
/// passed value"), and the head timer of every GET slept for `connectTimeout`.
@Suite struct SharedTierConfigurationTests {
    static let longest = ImageStore.Configuration.maxPeriod

    static func s3(_ change: (inout S3Configuration) -> Void = { _ in }) -> S3Configuration {
        var configuration = S3Configuration(endpoint: URL(string: "http://127.0.0.1:9")!, bucket: "b",
                                            credentials: S3Server.credentials)
        change(&configuration)
        return configuration
    }

    /// Each bad configuration and the field its error must name.
    static let bad: [(field: String, configuration: @Sendable () -> SharedTier.Configuration)] = [
        ("uploadQueueLimit", { .init(s3: s3(), uploadQueueLimit: 0) }),
        ("uploadConcurrency", { .init(s3: s3(), uploadConcurrency: 0) }),
        ("uploadConcurrency", { .init(s3: s3(), uploadConcurrency: -1) }),
        ("breakerThreshold", { .init(s3: s3(), breakerThreshold: 0) }),
        ("breakerCoolDown", { .init(s3: s3(), breakerCoolDown: .zero) }),
        ("breakerCoolDown", { .init(s3: s3(), breakerCoolDown: .seconds(Int64.max)) }),
        ("prefix", { .init(s3: s3(), prefix: "/imgstore/") }),
        ("connectTimeout", { .init(s3: s3 { $0.connectTimeout = .zero }) }),
        ("connectTimeout", { .init(s3: s3 { $0.connectTimeout = .seconds(Int64.max) }) }),
        ("connectTimeout", { .init(s3: s3 { $0.connectTimeout = longest + .nanoseconds(1) }) }),
        ("requestTimeout", { .init(s3: s3 { $0.requestTimeout = .seconds(-1) }) }),
        ("requestTimeout", { .init(s3: s3 { $0.requestTimeout = .seconds(Int64.max) }) }),
        ("maxResponseBytes", { .init(s3: s3 { $0.maxResponseBytes = 0 }) }),
        ("bucket", { .init(s3: s3 { $0.bucket = "" }) }),
        ("region", { .init(s3: s3 { $0.region = "" }) }),
        ("endpoint", { .init(s3: s3 { $0.endpoint = URL(string: "file:///tmp")! }) }),
    ]

    @Test(arguments: 0..<bad.count)
    func aFieldOutOfRangeIsATypedErrorNamingIt(index: Int) {
        let (field, configuration) = Self.bad[index]
        #expect {
            _ = try SharedTier(configuration: configuration())
        } throws: { error in
            guard case let .invalidConfiguration(reason) = error as? SharedTierError else { return false }
            return reason.contains(field)
        }
    }

    @Test func theS3ClientChecksItsOwnConfiguration() {
        #expect(throws: SharedTierError.self) { _ = try S3Client(configuration: Self.s3 { $0.requestTimeout = .seconds(Int64.max) }) }
    }

    /// The longest timeouts and cool-down are accepted, and a lookup with the longest head timeout runs (its timer
    /// is set; the server at port 9 refuses at once) instead of trapping.
    @Test func theEdgesAreAcceptedAndALookupWithTheLongestTimeoutsRuns() async throws {
        let tier = try SharedTier(configuration: .init(
            s3: Self.s3 {
                $0.connectTimeout = Self.longest
                $0.requestTimeout = Self.longest
            },
            uploadQueueLimit: .max, uploadConcurrency: .max, breakerThreshold: .max, breakerCoolDown: Self.longest))
        guard case .miss = await tier.lookup("https://origin.test/a.jpg") else {
            Issue.record("a lookup against a closed port was not a miss")
            return
        }
    }
}

/// An entry's dates go into the object's metadata as whole milliseconds (`Int64`). A date
/// `Int64` cannot hold (not finite, or about 2.9 × 10⁸ years away) trapped in the conversion
/// when an entry built with `SharedEntry`'s public initialiser was uploaded; it is a typed
/// failure, and nothing is sent.
@Suite struct SharedEntryDateTests {
    /// Seconds since 1970 (a `Date` argument would not do: its description traps on these).
    @Test(arguments: [Double.nan, .infinity, 1e300, -1e300])
    func anEntryWithADateTheLayoutCannotHoldFailsItsUploadWithATypedError(seconds: Double) async throws {
        let date = Date(timeIntervalSince1970: seconds)
        let tier = try SharedTier(configuration: .init(s3: SharedTierConfigurationTests.s3()))
        for badField in ["expires", "fetched"] {
            let (expires, fetched) = badField == "expires" ? (date, Date()) : (Date(), date)
            let entry = SharedEntry(url: "https://origin.test/a.png", body: Data([1, 2, 3]), format: "png", width: 1,
                                    height: 1, expires: expires, fetched: fetched)
            for outcome in [await tier.upload(entry), await tier.refreshMetadata(entry)] {
                guard case let .failed(.invalidEntry(url, reason)) = outcome else {
                    Issue.record("an entry dated \(seconds) s since 1970 gave \(outcome)")
                    continue
                }
                #expect(url == "https://origin.test/a.png")
                #expect(reason.contains(badField), "\(reason)")
            }
        }
        // Nothing was sent: the server at port 9 would have made each one `unreachable`.
        #expect(tier.statistics.errors["unreachable"] == nil)
        #expect(tier.statistics.errors["invalidEntry"] == 4)  // two fields, upload and refresh each
    }
}
