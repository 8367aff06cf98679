import Foundation
import ImageStore
import SharedTier

/// `warm --shared-tier URL`: fills a (new) host's store from the fleet's shared tier.
enum WarmCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "warm",
        summary: "Fill the store from a shared tier: list its objects, fetch them in parallel, validate and store each.",
        arguments: "",
        options: [
            SharedTierOptions.tierOption, SharedTierOptions.prefixOption,
            OptionSpec(name: "--limit", value: "N", help: "warm at most N objects, the first N in key order (default: all)"),
            SharedTierOptions.concurrencyOption, SharedTierOptions.timeoutOption, Options.maxDiskBytesOption,
        ],
        positional: 0...0,
        details: """
            Lists the tier's objects under the prefix (ListObjectsV2, in key order), fetches them
            --concurrency at a time, and stores each one that checks out under the URL its metadata names,
            with the absolute expiry and the origin's ETag and Last-Modified the object carries (so an entry
            never gains life by passing through the tier). The store is created when missing.

            An object is skipped, named on stderr and counted, never stored, when it is corrupt (its length,
            checksum or metadata do not check out, or its key is not the hash of its URL), invalid (the bytes
            are not a valid image in structure mode, or not the format and dimensions its metadata says),
            expired, or gone (removed since the listing). A progress bar is drawn on stderr when it is a
            terminal. The last line is
              warmed S of N objects from URL (E expired, C corrupt, I invalid, G gone, F failed)

            Exit status: 0 every listed object stored or expired (or gone); 65 some were corrupt or invalid
            (the others stored); 69 the tier is unavailable (unreachable, timed out, 5xx, no such bucket) or
            some fetches failed that way; 77 the tier refused the credentials; 74 the store failed; 64 usage
            error (no --shared-tier, a bad URL, a credential variable unset).
            """)

    /// What became of one listed object.
    enum Outcome: Sendable {
        case stored, expired, gone
        /// Skipped: the object is damaged or not what its metadata says.
        case corrupt(String)
        /// Skipped: the bytes are not a valid image, or not the one the metadata describes.
        case invalid(String)
        /// The request failed: the tier's problem, not the object's.
        case failed(SharedTierError)
        /// The local store failed to take it.
        case storeFailed(CommandFailure)
    }

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        guard let tier = try SharedTierOptions.tier(arguments) else {
            throw ArgumentParser.usage("warm needs --shared-tier URL")
        }
        let limit = try Options.count("--limit", arguments, in: 1...Int.max)
        let concurrency = try SharedTierOptions.concurrency(arguments)
        // Listed first: a tier that cannot be reached creates no store.
        let keys = try AsyncBridge.wait { await listKeys(tier, limit: limit) }.get()
        let store = try context.openStore(.create)
        let limits = LoaderFailureMessages.EntryLimits(storeLimit: store.configuration.maxEntryBytes,
                                                       maxDiskBytes: context.maxDiskBytes)
        let outcomes = AsyncBridge.mapShowingProgress("warm", keys, concurrency: concurrency) { key in
            await warm(key, from: tier, into: store, limits: limits)
        }
        try report(outcomes, of: keys, tier: tier, context: context)
    }

    /// The keys under the tier's prefix, at most `limit`, in key order.
    static func listKeys(_ tier: SharedTier, limit: Int?) async -> Result<[String], CommandFailure> {
        var keys: [String] = []
        var token: String?
        repeat {
            let wanted = min(1000, (limit ?? Int.max) - keys.count)
            do {
                let page = try await tier.client.list(prefix: tier.configuration.prefix, continuationToken: token, maxKeys: wanted)
                keys += page.objects.prefix(wanted).map(\.key)
                token = page.nextContinuationToken
            } catch {
                return .failure(LoaderFailureMessages.failure(error))
            }
        } while token != nil && keys.count < (limit ?? Int.max)
        return .success(keys)
    }

    /// Fetches, checks and stores the object at `key`.
    static func warm(_ key: String, from tier: SharedTier, into store: ImageStore,
                     limits: LoaderFailureMessages.EntryLimits) async -> Outcome {
        let object: S3Object?
        do { object = try await tier.client.get(key) } catch {
            return SharedTierOptions.isObjectProblem(error) ? .corrupt(LoaderFailureMessages.failure(error).message) : .failed(error)
        }
        guard let object else { return .gone }
        guard let url = object.head.metadata["imgstore-url"]?.removingPercentEncoding else {
            return .corrupt("the shared tier's object \(key) is corrupt: its metadata has no imgstore-url")
        }
        guard tier.key(for: url) == key else {
            return .corrupt("the shared tier's object \(key) is corrupt: its key is not the hash of its URL \(url)")
        }
        let entry: SharedEntry
        do { entry = try ObjectLayout.entry(from: object, url: url) } catch { return .corrupt(error.description) }
        guard entry.isFresh(at: Date()) else { return .expired }
        let image: ValidatedImage
        do { image = try store.validate(entry.body, for: url) } catch {
            // "not a valid image: REASON" (or what else the store says of the bytes).
            return .invalid("the shared tier's object \(key) for \(url) is \(LoaderFailureMessages.failure(error, limits: limits).message)")
        }
        let facts = image.facts
        guard facts.format.rawValue == entry.format, facts.width == entry.width, facts.height == entry.height else {
            return .invalid("the shared tier's object \(key) for \(url) is \(facts.format.rawValue) \(facts.width)x\(facts.height), "
                + "its metadata says \(entry.format) \(entry.width)x\(entry.height)")
        }
        // An absolute expiry beyond the store's limit is the tier's "never".
        let expiry: Expiry = entry.expires.timeIntervalSinceNow > ImageStore.Configuration.maxLifetime.seconds ? .never : .at(entry.expires)
        let validators = CacheValidators(etag: entry.originETag, lastModified: entry.originLastModified)
        do {
            try await store.async.put(image, for: url, expiry: expiry, validators: validators,
                                      durability: .batched(within: Durability.defaultBatchWindow))
        } catch let error as ImageStoreError {
            let failure = LoaderFailureMessages.failure(error, limits: limits)
            return failure.code == .dataError ? .invalid("\(url): \(failure.message)") : .storeFailed(failure)
        } catch {
            return .storeFailed(CommandFailure(code: .ioError, message: "storing \(url) failed: \(error)"))
        }
        return .stored
    }

    /// Names every skipped object on stderr, prints the summary, and fails with the status the
    /// worst outcome calls for.
    static func report(_ outcomes: [Outcome], of keys: [String], tier: SharedTier, context: CommandContext) throws(CommandFailure) {
        var stored = 0, expired = 0, corrupt = 0, invalid = 0, gone = 0, failed = 0
        var failures = BatchFailures(command: "warm")
        for outcome in outcomes {
            switch outcome {
            case .stored: stored += 1
            case .expired: expired += 1
            case .gone: gone += 1
            case let .corrupt(message): corrupt += 1; failures.note(CommandFailure(code: .dataError, message: "skipped: " + message))
            case let .invalid(message): invalid += 1; failures.note(CommandFailure(code: .dataError, message: "skipped: " + message))
            case let .failed(error): failed += 1; failures.note(LoaderFailureMessages.failure(error))
            case let .storeFailed(failure): failed += 1; failures.note(failure)
            }
        }
        context.print("warmed \(stored) of \(keys.count) objects from \(SharedTierOptions.describe(tier)) "
            + "(\(expired) expired, \(corrupt) corrupt, \(invalid) invalid, \(gone) gone, \(failed) failed)")
        try failures.finish(summary: "\(corrupt + invalid) objects skipped as corrupt or invalid")
    }
}
