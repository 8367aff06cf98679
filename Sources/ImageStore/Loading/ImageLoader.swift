import Foundation
import Locking
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Loads images by URL through a store: the store first (memory, then disk), then the fleet's
/// shared tier when there is one (`ImageLoaderSharedTier`), then the network, storing what it
/// downloads — one download per URL at a time, following the origin's caching headers, and
/// falling back to expired entries when the origin is away.
///
/// ```swift
/// let loader = try ImageLoader(store: store)
/// let image = try await loader.image(for: "https://cdn.example.com/img/42.jpg")
/// print(image.source, image.facts.width, image.facts.height)
/// ```
///
/// - Coalescing: concurrent loads of one URL (spelled the same way) share one download. A
///   caller whose task is cancelled stops waiting at once with `CancellationError`; the
///   download goes on for the others, and is cancelled when the last caller leaves.
/// - Each download is validated once, by the store's validator (`ImageLoaderStore.validate`),
///   and stored without a second check, with the loader's own `Configuration.durability`
///   (default `.batched`: the origin is the source of truth, so a download a power cut loses
///   is fetched again). The loader only calls the store's `async` writes: no load blocks a
///   thread of Swift's cooperative pool.
/// - Only whole, valid images are stored: a 2xx (not 206) body whose length matches its
///   `Content-Length`, within the store's `maxEntryBytes` (a larger one is aborted early),
///   that passes the structure check. Anything else fails, stores nothing, and is
///   remembered for `Configuration.negativeCacheLifetime`.
/// - Freshness comes from `Cache-Control`/`Expires` (see `Configuration`); `ETag` and
///   `Last-Modified` are stored, and an expired entry is revalidated with a conditional
///   request: a 304 renews it without downloading.
/// - Time is the store's clock (`ImageStore.Configuration.clock`), for expiry and negative
///   caching alike; only the download timeout is wall-clock.
///
/// Thread safety: every method may be called from any task or thread at once.
public final class ImageLoader: Sendable {
    /// The store images are read from and written to: an `ImageStore`, or a test's fake.
    public let store: any ImageLoaderStore
    /// The loader's caching, fallback and concurrency settings, fixed at creation.
    public let configuration: Configuration
    /// The fleet's shared tier, asked after the store and before the origin; nil for none.
    public let sharedTier: (any ImageLoaderSharedTier)?
    private let transport: any ImageTransport
    private let limiter: DownloadLimiter
    // LockedValue, not Mutex: ThreadSanitizer cannot see Mutex's futex on Linux (see Locking).
    private let state = LockedValue(State())
    let counters = Counters()

    /// A loader over `store`, downloading with `transport` (default: a `URLSessionTransport`),
    /// asking `sharedTier` (when given) after the store and before the origin, and offering it
    /// what it downloads. The loader does not own the store: close it after the loader's last load.
    /// - Throws: `ImageStoreError.invalidArgument` naming the first field of `configuration`
    ///   out of range (see `Configuration`'s fields for each range).
    public init(store: any ImageLoaderStore, configuration: Configuration = .init(),
                transport: any ImageTransport = URLSessionTransport(),
                sharedTier: (any ImageLoaderSharedTier)? = nil) throws(ImageStoreError) {
        try configuration.validate()
        self.store = store
        self.configuration = configuration
        self.transport = transport
        self.sharedTier = sharedTier
        limiter = DownloadLimiter(limit: configuration.maxConcurrentDownloads)
    }

    // MARK: - Loading

    /// The image at `url`: from the store when it holds a fresh entry, else downloaded (or
    /// revalidated) and stored; an expired entry when the origin fails and
    /// `Configuration.staleFallback` allows it.
    ///
    /// Cancelling the calling task ends this call with `CancellationError` at once; a download
    /// other callers share goes on.
    /// - Throws: `ImageLoaderError`: `invalidURL`; `recentlyFailed` (negative cache);
    ///   `unreachable`, `timedOut`, `httpStatus` (with no usable stale entry);
    ///   `responseTooLarge`, `lengthMismatch`, `emptyBody`, `invalidImage` (nothing stored);
    ///   `store` (the store failed, or cannot store: `readOnly`, `diskFull`, `storeFull`, …);
    ///   `transport`. Or `CancellationError`.
    public func image(for url: String) async throws -> LoadedImage {
        let result = await loadResult(url)
        if case .failure(.cancelled) = result { throw CancellationError() }
        return try result.get()
    }

    /// `image(for:)` for a `URL`.
    public func image(for url: URL) async throws -> LoadedImage { try await image(for: url.absoluteString) }

    /// The old name of `image(for:)`, which reports cancellation as `ImageLoaderError.cancelled`.
    @available(*, deprecated, renamed: "image(for:)", message: "image(for:) throws CancellationError when cancelled")
    public func load(_ url: String) async throws(ImageLoaderError) -> LoadedImage {
        try await loadResult(url).get()
    }

    /// The outcome of one load; cancellation is `.cancelled`.
    func loadResult(_ requestedURL: String) async -> Result<LoadedImage, ImageLoaderError> {
        guard !Task.isCancelled else { return .failure(.cancelled) }
        // Spellings of one URL (case of scheme and host, default port, fragment) share one
        // download and one negative-cache entry: work with the store's normal form from here.
        let url: String
        let requestURL: URL
        let stored: StoredImage?
        do throws(ImageLoaderError) {
            url = try normalized(requestedURL)
            requestURL = try Self.requestURL(url)
            stored = try readStore(url)
        } catch {
            return .failure(error)
        }
        if let stored, !stored.isStale, let image = image(from: stored, url: url, source: stored.source) { return .success(image) }
        if let failure = recentFailure(for: url) {
            counters.negativeHits.add(1, ordering: .relaxed)
            if let image = staleFallback(failure, stored: stored, url: url) { return .success(image) }
            return .failure(failure)
        }
        return await joinDownload(url, requestURL: requestURL)
    }

    /// Starts loading `urls` into the store in the background and returns at once. Failures
    /// are dropped (and negatively cached); at most `maxConcurrentDownloads` of these loads
    /// run at a time. Cancel the returned task to stop what has not finished (downloads that
    /// other callers also wait for go on); await its `value` to wait for all of them.
    @discardableResult
    public func prefetch(_ urls: [String]) -> Task<Void, Never> {
        let width = configuration.maxConcurrentDownloads
        return Task(priority: .utility) {
            await withTaskGroup(of: Void.self) { group in
                for (index, url) in urls.enumerated() {
                    if index >= width { await group.next() }
                    group.addTask { await self.prefetchOne(url) }  // failures are negatively cached and reported
                }
            }
        }
    }

    /// Forgets every remembered failure, so the next load of those URLs asks the origin again.
    public func forgetFailures() {
        state.withLock { $0.failures.removeAll() }
    }

    /// What this loader did since it was created.
    public var statistics: Statistics {
        Statistics(
            requests: counters.requests.load(ordering: .relaxed), notModified: counters.notModified.load(ordering: .relaxed),
            coalescedLoads: counters.coalesced.load(ordering: .relaxed),
            negativeHits: counters.negativeHits.load(ordering: .relaxed),
            staleServed: counters.staleServed.load(ordering: .relaxed),
            bytesDownloaded: counters.bytes.load(ordering: .relaxed),
            sharedTierHits: counters.sharedTier.hits.load(ordering: .relaxed))
    }

    // MARK: - Coalescing

    /// Waits for the download of `url`, starting it when none is running.
    private func joinDownload(_ url: String, requestURL: URL) async -> Result<LoadedImage, ImageLoaderError> {
        let waiterID = state.withLock { $0.newPendingWaiter() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let early = state.withLock { state -> Bool in
                    state.pending.remove(waiterID)
                    if state.cancelledEarly.remove(waiterID) != nil { return true }
                    if state.flights[url] != nil {
                        state.flights[url]!.waiters[waiterID] = continuation
                        counters.coalesced.add(1, ordering: .relaxed)
                        return false
                    }
                    state.nextID += 1
                    let flightID = state.nextID
                    // The task waits for this lock before it can finish, so it is registered first.
                    let task = Task {
                        let result = await self.download(url, requestURL: requestURL)
                        self.finish(url, flightID: flightID, result: result)
                    }
                    state.flights[url] = Flight(id: flightID, task: task, waiters: [waiterID: continuation])
                    return false
                }
                if early { continuation.resume(returning: .failure(.cancelled)) }
            }
        } onCancel: {
            leave(url, waiterID: waiterID)
        }
    }

    /// Hands a download's result to everyone still waiting for it.
    private func finish(_ url: String, flightID: Int, result: Result<LoadedImage, ImageLoaderError>) {
        let waiters = state.withLock { state -> [Waiter] in
            // A flight everyone left was removed already (and a newer one may have started).
            guard let flight = state.flights[url], flight.id == flightID else { return [] }
            state.flights[url] = nil
            return Array(flight.waiters.values)
        }
        if case let .failure(error) = result { counters.failed(error) }
        for waiter in waiters { waiter.resume(returning: result) }
    }

    /// A cancelled caller stops waiting; the last one out cancels the download.
    private func leave(_ url: String, waiterID: Int) {
        let (waiter, orphaned) = state.withLock { state -> (Waiter?, Task<Void, Never>?) in
            if state.pending.remove(waiterID) != nil {
                state.cancelledEarly.insert(waiterID)
                return (nil, nil)
            }
            guard var flight = state.flights[url], let waiter = flight.waiters.removeValue(forKey: waiterID) else {
                return (nil, nil)  // already finished
            }
            if flight.waiters.isEmpty {
                state.flights[url] = nil
                return (waiter, flight.task)
            }
            state.flights[url] = flight
            return (waiter, nil)
        }
        orphaned?.cancel()
        waiter?.resume(returning: .failure(.cancelled))
    }

    // MARK: - Downloading

    /// One download: runs in its own task, shared by every caller waiting for `url`.
    private func download(_ url: String, requestURL: URL) async -> Result<LoadedImage, ImageLoaderError> {
        // Another download (or another process) may have filled the store meanwhile.
        let stored: StoredImage?
        do { stored = try readStore(url) } catch { return .failure(error) }
        if let stored, !stored.isStale, let image = image(from: stored, url: url, source: stored.source) { return .success(image) }

        // The fleet's shared tier, before the origin: a fresh entry is the answer; an expired
        // one is revalidated with the origin's validators it carries.
        var expiredShared: ExpiredSharedEntry?
        if let sharedTier {
            switch await lookUpSharedTier(sharedTier, url: url) {
            case let .answer(result): return result
            case let .expired(entry): expiredShared = entry
            case .miss: break
            }
        }

        guard await limiter.acquire() else { return .failure(.cancelled) }
        defer { limiter.release() }

        var request = URLRequest(url: requestURL, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: configuration.downloadTimeout.seconds)
        for (name, value) in configuration.headers { request.setValue(value, forHTTPHeaderField: name) }
        // The origin's validators, never the tier's ETag: the shared entry's when there is one.
        if let validators = expiredShared?.image.validators ?? stored?.info.validators {
            if let etag = validators.etag { request.setValue(etag, forHTTPHeaderField: "If-None-Match") }
            if let lastModified = validators.lastModified {
                request.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since")
            }
        }
        counters.requests.add(1, ordering: .relaxed)
        let response: HTTPURLResponse
        let body: Data
        do { (response, body) = try await fetch(request, url: url) } catch {
            return fail(url, error, stored: stored)
        }
        counters.bytes.add(body.count, ordering: .relaxed)
        return await handle(response, body: body, url: url, stored: stored, expiredShared: expiredShared)
    }

    /// The transport's answer, or a typed error; `timedOut` after `Configuration.downloadTimeout`.
    private func fetch(_ request: URLRequest, url: String) async throws(ImageLoaderError) -> (HTTPURLResponse, Data) {
        let (transport, limit, timeout) = (transport, store.configuration.maxEntryBytes, configuration.downloadTimeout)
        do {
            return try await withThrowingTaskGroup(of: Answer?.self) { group in
                group.addTask { Answer(try await transport.fetch(request, bodyLimit: limit)) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let answer = try await group.next()! else { throw ImageLoaderError.timedOut(url: url, after: timeout) }
                return (answer.response, answer.body)
            }
        } catch {
            throw Self.loaderError(error, url: url, timeout: timeout)
        }
    }

    /// What a response means: a stored image, a renewed one, or a failure.
    private func handle(_ response: HTTPURLResponse, body: Data, url: String, stored: StoredImage?,
                        expiredShared: ExpiredSharedEntry?) async -> Result<LoadedImage, ImageLoaderError> {
        let headers = HTTPFreshness.headers(of: response)
        let now = store.configuration.clock()
        let freshness = HTTPFreshness(headers: headers, now: now, configuration: configuration)
        let status = response.statusCode
        if status == 304, let expiredShared {
            return await revalidated(expiredShared, url: url, headers: headers, freshness: freshness, now: now)
        }
        if status == 304, let stored {
            return await revalidated(stored, url: url, headers: headers, freshness: freshness)
        }
        // 206 is a part of the image, 304 without a stored entry answers a question we did not ask.
        guard (200...299).contains(status), status != 206 else {
            return fail(url, .httpStatus(url: url, status: status), stored: stored)
        }
        guard !body.isEmpty else { return fail(url, .emptyBody(url: url), stored: stored) }
        let limit = store.configuration.maxEntryBytes
        guard body.count <= limit else {
            return fail(url, .responseTooLarge(url: url, limit: limit, byteCount: body.count), stored: stored)
        }
        // With a content coding the header counts encoded bytes, not the decoded body.
        let encoding = headers["content-encoding"]?.lowercased() ?? "identity"
        if response.expectedContentLength >= 0, encoding == "identity", Int(response.expectedContentLength) != body.count {
            return fail(url, .lengthMismatch(url: url, expected: Int(response.expectedContentLength), received: body.count),
                        stored: stored)
        }
        // The one validation of this download, by the store's rules; the put trusts it.
        let image: ValidatedImage
        do { image = try store.validate(body, for: url) } catch {
            if case let .invalidImage(_, reason) = error {
                return fail(url, .invalidImage(url: url, reason: reason), stored: stored)
            }
            return .failure(.store(error))
        }
        clearFailure(for: url)
        let durability = configuration.durability
        guard freshness.isStorable else {
            // The origin forbids keeping this response, and an older copy must not outlive it.
            // Best effort: the answer is served either way, and an old copy left behind expires.
            if stored != nil {
                do { try await store.forget(url, durability: durability) } catch {
                    store.report(.backgroundFailure(.removingUncacheable, error: error))
                }
            }
            return .success(LoadedImage(url: url, data: body, facts: image.facts, source: .network, expiresAt: nil,
                                        isStored: false, staleReason: nil))
        }
        let validators = CacheValidators(etag: headers["etag"], lastModified: headers["last-modified"])
        do {
            let info = try await store.store(image, for: url, expiry: .after(freshness.lifetime),
                                             validators: validators, durability: durability)
            offerToSharedTier(image, info: info, fetchedAt: now, replacing: expiredShared?.image.tierVersion)
            return .success(LoadedImage(url: url, data: body, facts: info.facts ?? image.facts, source: .network,
                                        expiresAt: info.expiresAt, isStored: true, staleReason: nil))
        } catch {
            return .failure(Self.storeError(error))
        }
    }

    /// A store write's error as the loader reports it.
    static func storeError(_ error: any Error) -> ImageLoaderError {
        if let error = error as? ImageStoreError { return .store(error) }
        return .cancelled  // the store's async writes throw ImageStoreError or CancellationError
    }

    /// A 304: the stored bytes are current; renew their lifetime (and validators).
    private func revalidated(_ stored: StoredImage, url: String, headers: [String: String],
                             freshness: HTTPFreshness) async -> Result<LoadedImage, ImageLoaderError> {
        counters.notModified.add(1, ordering: .relaxed)
        clearFailure(for: url)
        let validators = CacheValidators(
            etag: headers["etag"] ?? stored.info.validators.etag,
            lastModified: headers["last-modified"] ?? stored.info.validators.lastModified)
        let info: EntryInfo?
        do {
            info = try await store.renew(url, expiry: .after(freshness.isStorable ? freshness.lifetime : .zero),
                                         validators: validators, durability: configuration.durability)
        } catch {
            return .failure(Self.storeError(error))
        }
        guard var image = image(from: stored, url: url, source: .revalidated) else {
            return .failure(.invalidImage(url: url, reason: "the stored entry is not a valid image"))
        }
        image.expiresAt = info?.expiresAt
        image.isStored = info != nil
        return .success(image)
    }

    /// Remembers a failure (unless it is a cancellation) and serves the stale entry if allowed.
    private func fail(_ url: String, _ error: ImageLoaderError,
                      stored: StoredImage?) -> Result<LoadedImage, ImageLoaderError> {
        guard error != .cancelled else { return .failure(error) }
        if configuration.negativeCacheLifetime > .zero {
            let now = store.configuration.clock()
            let until = now.addingTimeInterval(configuration.negativeCacheLifetime.seconds)
            state.withLock { $0.remember(.recentlyFailed(url: url, until: until, cause: error), for: url, now: now, until: until) }
        }
        if let image = staleFallback(error, stored: stored, url: url) { return .success(image) }
        return .failure(error)
    }

    // MARK: - Helpers

    /// The expired `stored` entry as a `.stale` image, when `failure` and the policy allow it.
    private func staleFallback(_ failure: ImageLoaderError, stored: StoredImage?, url: String) -> LoadedImage? {
        guard let stored, stored.isStale, failure.isOriginFailure else { return nil }
        switch configuration.staleFallback {
        case .never: return nil
        case .onUnreachable: if failure.isServerError { return nil }
        case .onUnreachableOrServerError: break
        }
        if let maxStaleness = configuration.maxStaleness, let expiresAt = stored.info.expiresAt,
           store.configuration.clock().timeIntervalSince(expiresAt) > maxStaleness.seconds {
            return nil
        }
        guard var image = image(from: stored, url: url, source: .stale) else { return nil }
        image.staleReason = failure
        counters.staleServed.add(1, ordering: .relaxed)
        return image
    }

    /// A stored entry as a loaded image; nil when it cannot be one (stored unvalidated and
    /// not an image), so the caller downloads it again.
    private func image(from stored: StoredImage, url: String, source: LoadedImage.Source) -> LoadedImage? {
        let facts: ImageFacts
        if let known = stored.info.facts { facts = known } else {
            // Stored unvalidated and not an image: not a failure, the caller downloads it again.
            do { facts = try store.validate(stored.data, for: url).facts } catch { return nil }
        }
        return LoadedImage(url: url, data: stored.data, facts: facts, source: source, expiresAt: stored.info.expiresAt,
                           isStored: true, staleReason: nil)
    }

    /// The stored entry, fresh or expired; nil when missing or corrupt (a corrupt entry is
    /// downloaded again, and the put replaces it).
    private func readStore(_ url: String) throws(ImageLoaderError) -> StoredImage? {
        do { return try store.image(for: url, allowingStale: true) } catch {
            if case .checksumMismatch = error { return nil }
            throw .store(error)
        }
    }

    private func recentFailure(for url: String) -> ImageLoaderError? {
        let now = store.configuration.clock()
        return state.withLock { state in
            guard let failure = state.failures[url] else { return nil }
            if failure.until > now { return failure.error }
            state.failures[url] = nil
            return nil
        }
    }

    private func clearFailure(for url: String) {
        state.withLock { _ = $0.failures.removeValue(forKey: url) }
    }

    /// `url` as a request URL: absolute http(s) with a host.
    private static func requestURL(_ url: String) throws(ImageLoaderError) -> URL {
        guard !url.isEmpty else { throw .invalidURL(url: url, reason: "the URL is empty") }
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased() else {
            throw .invalidURL(url: url, reason: "it is not a URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw .invalidURL(url: url, reason: "the scheme \"\(scheme)\" is not http or https")
        }
        guard let host = parsed.host, !host.isEmpty else { throw .invalidURL(url: url, reason: "it has no host") }
        return parsed
    }

    /// Maps a transport's error to the loader's.
    static func loaderError(_ error: any Error, url: String, timeout: Duration) -> ImageLoaderError {
        if let error = error as? ImageLoaderError { return error }
        if error is CancellationError || Task.isCancelled { return .cancelled }
        guard let error = error as? URLError else { return .transport(url: url, reason: "\(error)") }
        switch error.code {
        case .cancelled: return .cancelled
        case .timedOut: return .timedOut(url: url, after: timeout)
        case .cannotConnectToHost: return .unreachable(url: url, reason: "connection refused")
        case .cannotFindHost, .dnsLookupFailed: return .unreachable(url: url, reason: "host not found")
        case .networkConnectionLost: return .unreachable(url: url, reason: "connection lost")
        case .notConnectedToInternet: return .unreachable(url: url, reason: "no network")
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot:
            return .transport(url: url, reason: "TLS failed (URLError \(error.code.rawValue))")
        case .badServerResponse: return .transport(url: url, reason: "the server's response is not valid HTTP")
        default: return .transport(url: url, reason: "URLError \(error.code.rawValue)")
        }
    }
}

// MARK: - State

extension ImageLoader {
    typealias Waiter = CheckedContinuation<Result<LoadedImage, ImageLoaderError>, Never>

    /// One download and the callers waiting for it.
    struct Flight {
        var id: Int
        var task: Task<Void, Never>
        var waiters: [Int: Waiter]
    }

    /// A remembered failure (negative cache entry).
    struct Failure {
        var error: ImageLoaderError
        var until: Date
    }

    /// Everything guarded by the loader's lock.
    struct State {
        /// Downloads in progress, by URL as passed to `load`.
        var flights: [String: Flight] = [:]
        var nextID = 0
        /// Waiters between taking an id and joining a flight: a cancellation that lands then
        /// is recorded in `cancelledEarly`, and the waiter leaves as it joins.
        var pending: Set<Int> = []
        var cancelledEarly: Set<Int> = []
        /// The negative cache, by URL as passed to `load`.
        var failures: [String: Failure] = [:]

        mutating func newPendingWaiter() -> Int {
            nextID += 1
            pending.insert(nextID)
            return nextID
        }

        mutating func remember(_ error: ImageLoaderError, for url: String, now: Date, until: Date) {
            // Bound the table: when it grows, drop what has expired (and, past that, everything
            // older than the newest entries: a remembered failure is only an optimisation).
            if failures.count >= 4096 {
                failures = failures.filter { $0.value.until >= now }
                if failures.count >= 4096 { failures.removeAll() }
            }
            failures[url] = Failure(error: error, until: until)
        }
    }

    /// A response head and body: the task group's child result (nil is the timeout's).
    struct Answer: Sendable {
        var response: HTTPURLResponse
        var body: Data
        init(_ answer: (HTTPURLResponse, Data)) { (response, body) = answer }
    }

    final class Counters: Sendable {
        let requests = Atomic<Int>(0)
        let notModified = Atomic<Int>(0)
        let coalesced = Atomic<Int>(0)
        let negativeHits = Atomic<Int>(0)
        let staleServed = Atomic<Int>(0)
        let bytes = Atomic<Int>(0)
        let failures = LoaderFailureCounts()
        let sharedTier = SharedTierCounters()
        func failed(_ error: ImageLoaderError) { failures.count(error) }
    }
}
