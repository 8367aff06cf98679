import Foundation
import Locking

/// A tier shared by a fleet of hosts, between each host's own store and the origin, on
/// S3-compatible object storage (SeaweedFS, MinIO, Ceph RGW, AWS S3).
///
/// ```swift
/// let tier = try SharedTier(configuration: .init(s3: S3Configuration(bucketURL: "http://127.0.0.1:8333/imgstore")))
/// if case .hit(let entry) = await tier.lookup(url), entry.isFresh(at: .now) { return entry.body }
/// tier.enqueueUpload(downloadedEntry)     // best effort, in the background
/// ```
///
/// - **Failure is a miss, never an outage.** `lookup` never throws: a tier that is down,
///   slow, refusing the credentials or answering 5xx is a `.miss(.failed(…))` within the
///   configured timeouts, counted in `statistics`. After `breakerThreshold` consecutive
///   outages the tier is skipped (`.miss(.skipped)`, nothing sent) for `breakerCoolDown`,
///   then probed by one request.
/// - **Integrity.** Only an object whose length, checksum and metadata check out is a hit;
///   anything else is a miss counted as `corruptBody`.
/// - **Races between hosts.** A new entry is created with `If-None-Match: *`, a newer
///   download replaces the version read with `If-Match`; losing either race is counted in
///   `preconditionFailed`, not as an error: another host's copy is as good.
///
/// Thread safety: every method may be called from any task at once.
public final class SharedTier: Sendable {
    /// The configuration, fixed at creation.
    public let configuration: Configuration
    /// The S3 client the tier talks through.
    public let client: S3Client
    let breaker: CircuitBreaker
    private let counters = LockedValue(Statistics())
    private let queue: UploadQueue

    /// A tier over `configuration`. Sends nothing until the first lookup or upload.
    /// - Throws: `invalidConfiguration` naming the first bad field.
    public init(configuration: Configuration) throws(SharedTierError) {
        try configuration.validate()
        self.configuration = configuration
        client = try S3Client(configuration: configuration.s3)
        breaker = CircuitBreaker(threshold: configuration.breakerThreshold, coolDown: configuration.breakerCoolDown,
                                 now: configuration.now)
        queue = UploadQueue(limit: configuration.uploadQueueLimit, concurrency: configuration.uploadConcurrency)
    }

    /// The object key of `url` (see `ObjectLayout`).
    public func key(for url: String) -> String { ObjectLayout.key(for: url, prefix: configuration.prefix) }

    // MARK: - Reading

    /// The entry the tier holds for `url` (the store's normalised URL), fresh or not, or why
    /// there is none. Never throws and never returns bytes that fail their checks.
    public func lookup(_ url: String) async -> SharedLookup {
        let key = key(for: url)
        let result: Result<S3Object?, SharedTierError>
        switch await guarded({ () async throws(SharedTierError) -> S3Object? in try await self.client.get(key) }) {
        case .none:
            return .miss(.skipped)
        case let .some(outcome):
            result = outcome
        }
        do throws(SharedTierError) {
            guard let object = try result.get() else {
                count { $0.absent += 1 }
                return .miss(.absent)
            }
            let entry = try ObjectLayout.entry(from: object, url: url)
            count { $0.hits += 1 }
            return .hit(entry)
        } catch {
            count { $0.errors[error.kind, default: 0] += 1 }
            return .miss(.failed(error))
        }
    }

    // MARK: - Writing

    /// Writes `entry` now: creates it (`If-None-Match: *`), or replaces the version
    /// `replacing` names (`If-Match`). Never throws; the outcome is counted. An entry whose
    /// dates the object cannot hold is `.failed(.invalidEntry)`, and nothing is sent.
    public func upload(_ entry: SharedEntry, replacing etag: String? = nil) async -> SharedWriteOutcome {
        let metadata: [String: String]
        do { metadata = try ObjectLayout.metadata(of: entry) } catch { return failed(error) }
        guard ObjectLayout.metadataSize(metadata) <= ObjectLayout.metadataLimit else {
            count { $0.uploadsDropped += 1 }
            return .dropped
        }
        let key = key(for: entry.url)
        let condition: S3WriteCondition = etag.map { .replace(etag: $0) } ?? .create
        return await write { () async throws(SharedTierError) -> S3WriteOutcome in
            try await self.client.put(key, body: entry.body, metadata: metadata,
                                      contentType: ObjectLayout.contentType(entry.format), condition: condition)
        } counting: { $0.uploadsStored += 1 }
    }

    /// Queues `entry` for `upload(_:replacing:)` in the background and returns at once:
    /// false (and counted in `uploadsDropped`) when `uploadQueueLimit` uploads are waiting.
    @discardableResult
    public func enqueueUpload(_ entry: SharedEntry, replacing etag: String? = nil) -> Bool {
        let queued = queue.enqueue { _ = await self.upload(entry, replacing: etag) }
        if !queued { count { $0.uploadsDropped += 1 } }
        return queued
    }

    /// Queues `refreshMetadata(entry)` in the background, in the upload queue, and returns at
    /// once: false (and counted in `uploadsDropped`) when the queue is full.
    @discardableResult
    public func enqueueRefresh(_ entry: SharedEntry) -> Bool {
        let queued = queue.enqueue { _ = await self.refreshMetadata(entry) }
        if !queued { count { $0.uploadsDropped += 1 } }
        return queued
    }

    /// Waits until every queued upload has finished (for shutdown and tests).
    public func waitForUploads() async { await queue.waitUntilIdle() }

    /// Rewrites the metadata of `entry`'s object (a revalidated expiry, new validators)
    /// without sending the bytes again: a copy-in-place, if the object still has the bytes
    /// `entry.objectETag` names (`x-amz-copy-source-if-match`).
    ///
    /// The ETag of a plain PUT is the MD5 of the bytes, and a copy keeps it, so the condition
    /// guards against a newer download (other bytes) but not against another host's refresh
    /// of the same bytes: two refreshes race last-writer-wins, and both are revalidations the
    /// origin answered.
    public func refreshMetadata(_ entry: SharedEntry) async -> SharedWriteOutcome {
        let metadata: [String: String]
        do { metadata = try ObjectLayout.metadata(of: entry) } catch { return failed(error) }
        let key = key(for: entry.url)
        let checksum = Digest.hex(Digest.sha256(entry.body))
        return await write { () async throws(SharedTierError) -> S3WriteOutcome in
            try await self.client.replaceMetadata(key, metadata: metadata, bodySHA256: checksum,
                                                  contentType: ObjectLayout.contentType(entry.format),
                                                  ifMatch: entry.objectETag)
        } counting: { $0.refreshes += 1 }
    }

    // MARK: - Statistics

    /// What the tier did so far, with the queue depth and breaker state now.
    public var statistics: Statistics {
        var snapshot = counters.withLock { $0 }
        snapshot.queueDepth = queue.depth
        snapshot.breaker = breaker.current
        return snapshot
    }

    // MARK: - Internals

    /// Runs `request` if the breaker admits it (nil when it does not), and tells the breaker
    /// how it went.
    private func guarded<T: Sendable>(
        _ request: @Sendable () async throws(SharedTierError) -> T
    ) async -> Result<T, SharedTierError>? {
        guard breaker.admit() else {
            count { $0.skipped += 1 }
            return nil
        }
        do throws(SharedTierError) {
            let value = try await request()
            breaker.succeeded()
            return .success(value)
        } catch {
            if error.isOutage { breaker.failed() } else if error != .cancelled { breaker.succeeded() }
            return .failure(error)
        }
    }

    private func write(
        _ request: @Sendable () async throws(SharedTierError) -> S3WriteOutcome,
        counting stored: @Sendable (inout Statistics) -> Void
    ) async -> SharedWriteOutcome {
        switch await guarded(request) {
        case .none:
            return .skipped
        case .success(.stored):
            count(stored)
            return .stored
        case .success(.preconditionFailed):
            count { $0.preconditionFailed += 1 }
            return .lostRace
        case let .failure(error):
            return failed(error)
        }
    }

    /// `error` as a write's outcome, counted by kind.
    private func failed(_ error: SharedTierError) -> SharedWriteOutcome {
        count { $0.errors[error.kind, default: 0] += 1 }
        return .failed(error)
    }

    private func count(_ update: (inout Statistics) -> Void) {
        counters.withLock { update(&$0) }
    }
}

/// What `SharedTier.lookup` found.
public enum SharedLookup: Sendable, Equatable {
    /// The tier holds an entry (check `isFresh(at:)`: an expired one is for revalidation).
    case hit(SharedEntry)
    /// No entry to use, and why.
    case miss(SharedMiss)
}

/// Why a lookup found nothing to use. Go to the origin in every case.
public enum SharedMiss: Sendable, Equatable {
    /// The tier holds no object for the URL.
    case absent
    /// The circuit breaker is open: nothing was sent.
    case skipped
    /// The request failed, or the object failed its checks (`corruptBody`).
    case failed(SharedTierError)
}

/// What a write to the tier did. None of them is the caller's problem: the tier is best effort.
public enum SharedWriteOutcome: Sendable, Equatable {
    /// Written.
    case stored
    /// Another host wrote first (HTTP 412); its copy stands.
    case lostRace
    /// Not sent: the breaker is open.
    case skipped
    /// Not sent: its metadata is over S3's 2 KB limit.
    case dropped
    /// The request failed.
    case failed(SharedTierError)
}
