import Foundation
import ImageStore

extension SharedTier {
    /// The tier's settings, fixed at creation.
    public struct Configuration: Sendable {
        /// The bucket and how to reach it (timeouts included).
        public var s3: S3Configuration
        /// The key prefix every object of this fleet shares (default `imgstore/`).
        public var prefix: String
        /// Uploads waiting at most; one more is dropped and counted (default 256).
        public var uploadQueueLimit: Int
        /// Uploads running at once (default 2).
        public var uploadConcurrency: Int
        /// Consecutive outages that open the circuit breaker (default 5).
        public var breakerThreshold: Int
        /// How long an open breaker skips the tier before it probes again (default 30 s); more
        /// than 0, at most a year.
        public var breakerCoolDown: Duration
        /// The clock for expiry and the breaker (default: the wall clock). Signing always
        /// uses the wall clock, which the server checks.
        public var now: @Sendable () -> Date

        /// A configuration over `s3` with the defaults above.
        public init(s3: S3Configuration, prefix: String = "imgstore/", uploadQueueLimit: Int = 256,
                    uploadConcurrency: Int = 2, breakerThreshold: Int = 5, breakerCoolDown: Duration = .seconds(30),
                    now: @escaping @Sendable () -> Date = { Date() }) {
            self.s3 = s3
            self.prefix = prefix
            self.uploadQueueLimit = uploadQueueLimit
            self.uploadConcurrency = uploadConcurrency
            self.breakerThreshold = breakerThreshold
            self.breakerCoolDown = breakerCoolDown
            self.now = now
        }

        /// - Throws: `invalidConfiguration` naming the first field out of range.
        func validate() throws(SharedTierError) {
            guard uploadQueueLimit >= 1 else { throw .invalidConfiguration(reason: "uploadQueueLimit must be at least 1") }
            guard uploadConcurrency >= 1 else { throw .invalidConfiguration(reason: "uploadConcurrency must be at least 1") }
            guard breakerThreshold >= 1 else { throw .invalidConfiguration(reason: "breakerThreshold must be at least 1") }
            let longest = ImageStore.Configuration.maxPeriod
            guard breakerCoolDown > .zero && breakerCoolDown <= longest else {
                throw .invalidConfiguration(
                    reason: "breakerCoolDown is \(breakerCoolDown); it must be more than 0 and at most \(longest) (a year)")
            }
            guard !prefix.hasPrefix("/") else { throw .invalidConfiguration(reason: "prefix '\(prefix)' must not start with /") }
        }
    }
}
