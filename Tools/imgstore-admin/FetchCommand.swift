import Foundation
import ImageStore

/// `fetch URL...`: loads each URL through an `ImageLoader` into the store (to warm a store from ops).
enum FetchCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "fetch",
        summary: "Load each URL through the loader into the store (store, else network). Exits 1 if any fails.",
        arguments: "URL...",
        options: [
            OptionSpec(name: "--timeout", value: "SECONDS", help: "per-download timeout, at most 86400 (default 30)"),
            OptionSpec(name: "--concurrency", value: "N", help: "downloads at once, 1 to 1024 (default 8)"),
            SharedTierOptions.tierOption, SharedTierOptions.prefixOption, SharedTierOptions.timeoutOption,
            Options.maxDiskBytesOption,
        ],
        positional: 1...Int.max,
        details: """
            Prints one line per URL, in order: where the image came from (disk, network, revalidated,
            stale), its size and dimensions, and the URL; or "failed" and the reason. Responses are
            stored with the TTL their caching headers give. A stale image (origin unreachable or 5xx)
            counts as loaded. Exit status 0 when every URL loaded, 1 when any failed.

            With --shared-tier URL the loader asks the fleet's tier between the store and the origin
            ("shared": a fresh hit, validated and stored), and uploads what it downloads to the tier; the
            tool waits for those uploads before it exits, then prints what the tier did on stderr:
              shared tier: H hits, A absent, S skipped by the breaker, P stored, L lost races (412), E errors (KIND N, ...)
            (errors count failed lookups and uploads alike). A tier that is down or refuses the credentials is a
            miss (the origin answers); its circuit breaker skips it after 5 consecutive outages. A bad URL
            or an unset credential variable is a usage error (64).
            """)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        var configuration = ImageLoader.Configuration()
        if let timeout = try Options.duration("--timeout", arguments, limit: 86_400) { configuration.downloadTimeout = timeout }
        if let count = try Options.count("--concurrency", arguments, in: 1...1024) { configuration.maxConcurrentDownloads = count }
        let tier = try SharedTierOptions.tier(arguments, breaker: true)
        let store = try context.openStore(.create)
        defer { store.close() }
        let loader = try CommandFailure.mapping { () throws(ImageStoreError) in
            try ImageLoader(store: store, configuration: configuration, sharedTier: tier)
        }
        let urls = arguments.positionals
        let results = AsyncBridge.wait {
            let results = await loadAll(urls, with: loader)
            // The loader's uploads to the tier run in the background: let them land.
            await tier?.waitForUploads()
            return results
        }
        var failures = 0
        for (url, result) in zip(urls, results) {
            switch result {
            case let .success(image):
                let source = image.source.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)
                let size = "\(image.data.count) bytes".padding(toLength: 13, withPad: " ", startingAt: 0)
                let facts = Describe.image(image.facts).padding(toLength: 16, withPad: " ", startingAt: 0)
                context.print("\(source)\(size)\(facts)\(Describe.escaped(url))")
            case let .failure(error):
                failures += 1
                context.print("failed      \(Describe.escaped(url)): \(Describe.escaped(error.description))")
            }
        }
        if let tier { Output.standardError("imgstore-admin fetch: \(SharedTierOptions.summary(tier.statistics))\n") }
        if failures > 0 {
            throw CommandFailure(code: .notFound, message: "\(failures) of \(urls.count) URLs failed to load")
        }
    }

    /// Loads every URL at once (the loader limits downloads) and returns the outcomes in the
    /// order of `urls`.
    ///
    /// Each child task awaits the load into a local before it builds the tuple it returns. Written
    /// as `return (index, .success(try await loader.load(url)))`, Swift 6.3.1's optimiser (-O
    /// only) lost `index` across the suspension in the middle of the tuple expression: the
    /// task reported index 0 for every URL, so the other slots stayed nil and the release build
    /// trapped on the unwrap. The code was correct Swift; the compiler was wrong (a standalone
    /// reproducer, with no imgstore code, shows the same with -O and not with -Onone).
    static func loadAll(_ urls: [String], with loader: ImageLoader) async -> [Result<LoadedImage, ImageLoaderError>] {
        await withTaskGroup(of: (Int, Result<LoadedImage, ImageLoaderError>).self) { group in
            for (index, url) in urls.enumerated() {
                group.addTask {
                    let outcome = await load(url, with: loader)
                    return (index, outcome)
                }
            }
            var results = [Result<LoadedImage, ImageLoaderError>?](repeating: nil, count: urls.count)
            for await (index, result) in group { results[index] = result }
            return results.enumerated().map { index, result in
                // Invariant: each child task reports its own index exactly once.
                guard let result else { preconditionFailure("no result for URL \(index) of \(urls.count)") }
                return result
            }
        }
    }

    private static func load(_ url: String, with loader: ImageLoader) async -> Result<LoadedImage, ImageLoaderError> {
        do throws(ImageLoaderError) {
            let image = try await loader.load(url)
            return .success(image)
        } catch {
            return .failure(error)
        }
    }
}
