extension SharedTier {
    /// What the tier did since it was created: every lookup and upload lands in one counter.
    public struct Statistics: Sendable, Equatable {
        /// Lookups that returned an entry.
        public var hits = 0
        /// Lookups that found no object.
        public var absent = 0
        /// Lookups and uploads skipped because the breaker was open.
        public var skipped = 0
        /// Failed requests (lookups, uploads, refreshes) by `SharedTierError.kind`.
        public var errors: [String: Int] = [:]
        /// Objects written (created or replaced).
        public var uploadsStored = 0
        /// Writes that lost the race to another host (HTTP 412): not errors.
        public var preconditionFailed = 0
        /// Uploads dropped because the queue was full, or their metadata too large.
        public var uploadsDropped = 0
        /// Metadata refreshes written by copy-in-place.
        public var refreshes = 0
        /// Uploads waiting or running now.
        public var queueDepth = 0
        /// The circuit breaker's state now.
        public var breaker = CircuitBreakerState.closed(failures: 0)

        /// All failed requests.
        public var errorCount: Int { errors.values.reduce(0, +) }
    }
}
