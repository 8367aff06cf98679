import SharedTier

extension StatsCommand {
    /// What `stats --shared-tier` reports about the tier.
    struct TierContents: Encodable, Sendable {
        /// The bucket URL (endpoint and bucket only: never credentials).
        var url: String
        var prefix: String
        var objects: Int
        var bytes: Int
    }

    /// Lists every object under the tier's prefix and adds them up.
    static func contents(of tier: SharedTier) async -> Result<TierContents, CommandFailure> {
        var contents = TierContents(url: SharedTierOptions.describe(tier), prefix: tier.configuration.prefix, objects: 0, bytes: 0)
        var token: String?
        repeat {
            do {
                let page = try await tier.client.list(prefix: tier.configuration.prefix, continuationToken: token)
                contents.objects += page.objects.count
                contents.bytes += page.objects.reduce(0) { $0 + $1.size }
                token = page.nextContinuationToken
            } catch {
                return .failure(SharedTierOptions.failure(error))
            }
        } while token != nil
        return .success(contents)
    }
}
