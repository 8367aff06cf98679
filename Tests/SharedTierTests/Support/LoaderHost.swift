import Foundation
import ImageStore
import ImageStoreTestSupport
import Locking
import Testing
@testable import SharedTier

/// One host of a fleet inside a test: its own store (validation on, its own manual clock),
/// its own `SharedTier` client over the shared server, and a loader asking store → tier → origin.
final class LoaderHost: Sendable {
    let clock: ManualClock
    let store: ImageStore
    let tier: SharedTier
    /// What the loader is given as its tier: `tier` itself, or a wrapper around it.
    let loader: ImageLoader
    private let directory: String

    /// A host at `clock` over `tier` (the loader sees `wrap(tier)`; default the tier itself).
    init(tier: SharedTier, clock: ManualClock,
         wrap: (SharedTier) -> any ImageLoaderSharedTier = { $0 }) throws {
        self.clock = clock
        self.tier = tier
        directory = makeTemporaryDirectory()
        var storeConfiguration = makeConfiguration(validation: .rejectInvalid, clock: clock)
        storeConfiguration.durability = .none
        store = try ImageStore(path: directory + "/store", configuration: storeConfiguration)
        var configuration = ImageLoader.Configuration()
        configuration.downloadTimeout = .seconds(60)  // generous: the machine is loaded
        configuration.negativeCacheLifetime = .zero
        loader = try ImageLoader(store: store, configuration: configuration, sharedTier: wrap(tier))
    }

    /// A host over a fresh tier client for `server` (the suite's generous timeouts unless given).
    convenience init(_ server: S3Server, clock: ManualClock = ManualClock(), s3: S3Configuration? = nil,
                     breakerThreshold: Int = 5, wrap: (SharedTier) -> any ImageLoaderSharedTier = { $0 }) throws {
        let tier = try SharedTier(configuration: .init(s3: s3 ?? server.configuration(), breakerThreshold: breakerThreshold,
                                                       breakerCoolDown: .seconds(30), now: clock.source))
        try self.init(tier: tier, clock: clock, wrap: wrap)
    }

    func load(_ url: String) async throws -> LoadedImage { try await loader.image(for: url) }

    /// Checks the store's consistency, closes it and deletes it.
    func close() throws {
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try checkConsistency(of: store)
        store.close()
    }
}

/// Runs `body` with an origin and a fresh tier server; both are stopped however it ends.
func withFleet<R: Sendable>(_ body: (S3Server, TestOrigin) async throws -> R) async throws -> R {
    try await S3Server.with { server in
        let origin = try TestOrigin()
        defer { origin.stop() }
        return try await body(server, origin)
    }
}

/// A tier wrapper that holds the loader's offers until `release()`, so a test decides the
/// order in which two hosts' uploads reach the server (a race, replayed deterministically).
final class HeldOffers: ImageLoaderSharedTier {
    let tier: SharedTier
    private let held = LockedValue<[SharedTierImage]>([])

    init(_ tier: SharedTier) { self.tier = tier }

    func image(for url: String) async -> SharedTierImage? { await tier.image(for: url) }
    func offer(_ image: SharedTierImage) { held.withLock { $0.append(image) } }
    func refreshed(_ image: SharedTierImage) { tier.refreshed(image) }

    /// Uploads the held offers now, in order, and returns what each did.
    func release() async -> [SharedWriteOutcome] {
        let offers = held.withLock { held in
            defer { held = [] }
            return held
        }
        var outcomes: [SharedWriteOutcome] = []
        for image in offers {
            outcomes.append(await tier.upload(SharedTier.entry(image), replacing: image.tierVersion))
        }
        return outcomes
    }
}
