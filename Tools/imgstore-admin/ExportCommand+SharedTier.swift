import Foundation
import ImageStore
import SharedTier

/// `export --to-shared-tier URL`: pushes the store's live entries to the fleet's shared tier.
extension ExportCommand {
    /// What became of one entry.
    enum TierOutcome: Sendable {
        case uploaded
        /// The tier holds the key already (a HEAD found it, or the create lost with 412).
        case alreadyThere
        /// Expired, removed since the listing, or stored without image facts (unvalidated).
        case leftOut
        /// Its metadata would be over S3's 2 KB.
        case tooLarge(String)
        case unreadable(String)
        case failed(SharedTierError)
    }

    static func exportToTier(_ tier: SharedTier, _ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let concurrency = try SharedTierOptions.concurrency(arguments)
        let store = try context.openStore(.read)
        let entries = try CommandFailure.mapping { () throws(ImageStoreError) in try store.entries() }.map(\.url).sorted()
        let outcomes = AsyncBridge.mapShowingProgress("export", entries, concurrency: concurrency) { url in
            await push(url, from: store, to: tier)
        }
        var uploaded = 0, present = 0, leftOut = 0, tooLarge = 0, failed = 0
        var failures = BatchFailures(command: "export")
        for outcome in outcomes {
            switch outcome {
            case .uploaded: uploaded += 1
            case .alreadyThere: present += 1
            case .leftOut: leftOut += 1
            case let .tooLarge(url):
                tooLarge += 1
                failures.note(CommandFailure(code: .dataError, message: "not exported: the URL \(url) does not fit the tier's 2 KB of metadata"))
            case let .unreadable(message): failed += 1; failures.note(CommandFailure(code: .ioError, message: message))
            case let .failed(error): failed += 1; failures.note(SharedTierOptions.failure(error))
            }
        }
        context.print("exported \(uploaded) of \(entries.count) entries to \(SharedTierOptions.describe(tier)) "
            + "(\(present) already there, \(leftOut) expired or removed, \(tooLarge) too large, \(failed) failed)")
        try failures.finish(summary: "\(tooLarge) entries not exported")
    }

    /// Uploads the entry for `url` unless the tier has it.
    static func push(_ url: String, from store: ImageStore, to tier: SharedTier) async -> TierOutcome {
        let image: StoredImage?
        do { image = try store.image(for: url) } catch {
            return .unreadable("cannot read \(url): \(CommandFailure(storeError: error).message)")
        }
        guard let image, let facts = image.info.facts else { return .leftOut }
        do {
            if try await tier.client.head(tier.key(for: image.info.url)) != nil { return .alreadyThere }
        } catch {
            return .failed(error)
        }
        let entry = SharedEntry(
            url: image.info.url, body: image.data, format: facts.format.rawValue, width: facts.width, height: facts.height,
            originETag: image.info.validators.etag, originLastModified: image.info.validators.lastModified,
            expires: image.info.expiresAt ?? .distantFuture, fetched: image.info.createdAt)
        switch await tier.upload(entry) {
        case .stored: return .uploaded
        case .lostRace: return .alreadyThere
        case .dropped: return .tooLarge(url)
        case let .failed(error): return .failed(error)
        case .skipped:
            // Invariant: the tool's tier never opens its breaker (breakerThreshold is Int.max).
            preconditionFailure("the shared tier's breaker opened in imgstore-admin")
        }
    }
}
