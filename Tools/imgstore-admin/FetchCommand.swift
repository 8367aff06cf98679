import Foundation
import ImageStore
import Synchronization

/// `fetch URL...`: loads each URL through an `ImageLoader` into the store (to warm a store from ops).
enum FetchCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "fetch",
        summary: "Load each URL through the loader into the store (store, else network). Exits 1 if any fails.",
        arguments: "URL...",
        options: [
            OptionSpec(name: "--timeout", value: "SECONDS", help: "per-download timeout (default 30)"),
            OptionSpec(name: "--concurrency", value: "N", help: "downloads at once (default 8)"),
        ],
        positional: 1...Int.max,
        details: """
            Prints one line per URL, in order: where the image came from (disk, network, revalidated,
            stale), its size and dimensions, and the URL; or "failed" and the reason. Responses are
            stored with the TTL their caching headers give. A stale image (origin unreachable or 5xx)
            counts as loaded. Exit status 0 when every URL loaded, 1 when any failed.
            """)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        var configuration = ImageLoader.Configuration()
        if let text = arguments.value("--timeout") {
            guard let seconds = Double(text), seconds > 0 else { throw usage("--timeout needs a positive number of seconds") }
            configuration.timeout = seconds
        }
        if let text = arguments.value("--concurrency") {
            guard let count = Int(text), count > 0 else { throw usage("--concurrency needs a positive whole number") }
            configuration.maxConcurrentDownloads = count
        }
        let store = try context.openStore()
        defer { store.close() }
        let loader = ImageLoader(store: store, configuration: configuration)
        let urls = arguments.positionals
        let results = wait {
            await withTaskGroup(of: (Int, Result<LoadedImage, ImageLoaderError>).self) { group in
                for (index, url) in urls.enumerated() {
                    group.addTask {
                        do throws(ImageLoaderError) { return (index, .success(try await loader.load(url))) } catch {
                            return (index, .failure(error))
                        }
                    }
                }
                var results = [Result<LoadedImage, ImageLoaderError>?](repeating: nil, count: urls.count)
                for await (index, result) in group { results[index] = result }
                return results.map { $0! }
            }
        }
        var failures = 0
        for (url, result) in zip(urls, results) {
            switch result {
            case let .success(image):
                let source = image.source.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)
                let size = "\(image.data.count) bytes".padding(toLength: 13, withPad: " ", startingAt: 0)
                let facts = Describe.image(image.facts).padding(toLength: 16, withPad: " ", startingAt: 0)
                context.print("\(source)\(size)\(facts)\(url)")
            case let .failure(error):
                failures += 1
                context.print("failed      \(url): \(error.description)")
            }
        }
        if failures > 0 {
            throw CommandFailure(code: .notFound, message: "\(failures) of \(urls.count) URLs failed to load")
        }
    }

    private static func usage(_ message: String) -> CommandFailure { CommandFailure(code: .usage, message: message) }

    /// Runs `body` on the global executor and blocks this (main) thread until it returns.
    private static func wait<R: Sendable>(_ body: @escaping @Sendable () async -> R) -> R {
        let box = ResultBox<R>()
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let result = await body()
            box.value.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return box.value.withLock { $0! }
    }
}

/// Carries a result from the detached task back to the blocked main thread.
private final class ResultBox<R: Sendable>: Sendable {
    let value = Mutex<R?>(nil)
}
