import Foundation
import ImageStore

/// `fetch URL...`: loads each URL through an `ImageLoader` into the store (to warm a store from ops).
enum FetchCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "fetch",
        summary: "Load each URL through the loader into the store (store, else network); each failure is one line on stderr.",
        arguments: "URL...",
        options: [
            OptionSpec(name: "--timeout", value: "SECONDS", help: "per-download timeout, at most 86400 (default 30)"),
            OptionSpec(name: "--concurrency", value: "N", help: "downloads at once, 1 to 1024 (default 8)"),
            SharedTierOptions.tierOption, SharedTierOptions.prefixOption, SharedTierOptions.timeoutOption,
            Options.maxDiskBytesOption,
        ],
        positional: 1...Int.max,
        details: """
            Prints one line on stdout per URL loaded, in order: where the image came from (disk,
            network, revalidated, stale), its size and dimensions, and the URL; and one line on stderr
            per URL that failed: "imgstore-admin fetch: URL: reason". Responses are stored with the TTL
            their caching headers give. A stale image (origin unreachable or 5xx) counts as loaded.

            Exit status: 0 every URL loaded; 1 the origin answered 404 or 410; 65 a malformed or non-http
            URL, or a response that is not an image, is empty or is over the entry size limit; 69 the
            origin is unreachable, took longer than --timeout, cut the body short or answered 5xx or
            another status; 74 the store failed. With several failures, the most severe: 74, 69, 65, 1.

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
        let limits = LoaderFailureMessages.EntryLimits(storeLimit: store.configuration.maxEntryBytes,
                                                       maxDiskBytes: context.maxDiskBytes)
        let results = AsyncBridge.wait {
            let results = await loadAll(urls, with: loader, store: store, limits: limits)
            // The loader's uploads to the tier run in the background: let them land.
            await tier?.waitForUploads()
            return results
        }
        var failed: [ExitCode] = []
        for (url, result) in zip(urls, results) {
            switch result {
            case let .success(image):
                let source = image.source.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)
                let size = "\(image.data.count) bytes".padding(toLength: 13, withPad: " ", startingAt: 0)
                let facts = Describe.image(image.facts).padding(toLength: 16, withPad: " ", startingAt: 0)
                context.print("\(source)\(size)\(facts)\(Describe.escaped(url))")
            case let .failure(failure):
                failed.append(failure.code)
                let shown = url.isEmpty ? "\"\"" : url  // an empty URL still shows where it stands
                Output.standardError("imgstore-admin fetch: \(Describe.escaped(shown + ": " + failure.message))\n")
            }
        }
        if let tier { Output.standardError("imgstore-admin fetch: \(SharedTierOptions.summary(tier.statistics))\n") }
        // Each failure has had its line: the status says the rest.
        if let worst = LoaderFailureMessages.mostSevere(failed) { throw CommandFailure(code: worst, message: "") }
    }

    /// Loads every URL at once (the loader limits downloads) and returns the outcomes in the
    /// order of `urls`.
    ///
    /// Each child task awaits the load into a local before it builds the tuple it returns. Written
    /// as `return (index, .success(try await loader.load(url)))`, Swift 6.3.1's optimiser (-O
    /// only) lost `index` across the suspension in the middle of the tuple expression: the
    /// task reported index 0 for every URL, so the other slots stayed nil and the release build
    /// trapped on the unwrap. The code was correct Swift; the compiler was wrong: the standalone
    /// reproducer `Tools/compiler-bugs/task-group-index-lost-at-O.swift` (no imgstore code)
    /// shows it with -O and not with -Onone, and only with a typed `do throws(E)`.
    static func loadAll(_ urls: [String], with loader: ImageLoader, store: ImageStore,
                        limits: LoaderFailureMessages.EntryLimits) async -> [Result<LoadedImage, CommandFailure>] {
        await withTaskGroup(of: (Int, Result<LoadedImage, CommandFailure>).self) { group in
            for (index, url) in urls.enumerated() {
                group.addTask {
                    let outcome = await load(url, with: loader, store: store, limits: limits)
                    return (index, outcome)
                }
            }
            var results = [Result<LoadedImage, CommandFailure>?](repeating: nil, count: urls.count)
            for await (index, result) in group { results[index] = result }
            return results.enumerated().map { index, result in
                // Invariant: each child task reports its own index exactly once.
                guard let result else { preconditionFailure("no result for URL \(index) of \(urls.count)") }
                return result
            }
        }
    }

    /// Loads `url`, or says why it failed in the tool's terms. The URL is checked first with
    /// the store's own rules, so a malformed one is reported with its reason alone (the loader
    /// wraps the store's whole sentence).
    private static func load(_ url: String, with loader: ImageLoader, store: ImageStore,
                             limits: LoaderFailureMessages.EntryLimits) async -> Result<LoadedImage, CommandFailure> {
        do { _ = try store.normalizedURL(url) } catch {
            return .failure(LoaderFailureMessages.failure(error, limits: limits))
        }
        do {
            return .success(try await loader.image(for: url))
        } catch let error as ImageLoaderError {
            return .failure(LoaderFailureMessages.failure(error, limits: limits))
        } catch {
            // `image(for:)` throws `ImageLoaderError`, or `CancellationError` once cancelled.
            return .failure(LoaderFailureMessages.failure(ImageLoaderError.cancelled, limits: limits))
        }
    }
}
