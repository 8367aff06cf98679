import Dispatch
import Synchronization

/// How the tool's synchronous commands run async work: on the global executor, with the main
/// thread blocked until it is done (the tool has nothing else to do meanwhile).
enum AsyncBridge {
    /// Runs `body` on the global executor and blocks this (main) thread until it returns.
    static func wait<R: Sendable>(_ body: @escaping @Sendable () async -> R) -> R {
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

    /// `map` from the (blocked) main thread, with a progress bar labelled `label` on a terminal.
    static func mapShowingProgress<T: Sendable, R: Sendable>(
        _ label: String, _ items: [T], concurrency: Int, _ body: @escaping @Sendable (T) async -> R
    ) -> [R] {
        wait {
            var progress = Progress(label: label, total: items.count)
            progress.update(0, "")
            let results = await map(items, concurrency: concurrency, body) { progress.update($0, "") }
            progress.finish()
            return results
        }
    }

    /// Runs `body` for every item, at most `concurrency` at once, and returns the results in
    /// the order of `items`. `finished` is called (serially, on the caller's task) as each one
    /// ends, with how many have ended: for a progress bar.
    ///
    /// Each child task awaits `body` into a local before it builds the tuple it returns: see
    /// `FetchCommand.loadAll` for the Swift 6.3.1 -O miscompile that the tuple expression hit.
    static func map<T: Sendable, R: Sendable>(
        _ items: [T], concurrency: Int, _ body: @escaping @Sendable (T) async -> R,
        finished: (Int) -> Void = { _ in }
    ) async -> [R] {
        await withTaskGroup(of: (Int, R).self) { group in
            var results = [R?](repeating: nil, count: items.count)
            var next = 0
            var done = 0
            func start(_ group: inout TaskGroup<(Int, R)>) {
                guard next < items.count else { return }
                let index = next, item = items[index]
                next += 1
                group.addTask {
                    let result = await body(item)
                    return (index, result)
                }
            }
            for _ in 0..<min(concurrency, items.count) { start(&group) }
            while let (index, result) = await group.next() {
                results[index] = result
                done += 1
                finished(done)
                start(&group)
            }
            return results.enumerated().map { index, result in
                // Invariant: each child task reports its own index exactly once.
                guard let result else { preconditionFailure("no result for item \(index) of \(items.count)") }
                return result
            }
        }
    }
}

/// Carries a result from the detached task back to the blocked main thread.
private final class ResultBox<R: Sendable>: Sendable {
    let value = Mutex<R?>(nil)
}
