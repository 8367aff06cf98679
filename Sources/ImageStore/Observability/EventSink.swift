import Dispatch
import Foundation
import Locking

/// Delivers `StoreEvent`s to the configured handler, in order, on a queue of its own: the
/// handler never runs on the writer queue or a caller's thread, so it may log, block for a
/// moment or call the store without holding anything up or deadlocking. Remembers the last
/// background failure for `metrics`.
final class EventSink: Sendable {
    private let handler: (@Sendable (StoreEvent) -> Void)?
    private let queue = DispatchQueue(label: "imgstore.events")
    private let lastFailure = LockedValue<StoreMetrics.BackgroundFailure?>(nil)
    private let clock: @Sendable () -> Date
    /// Told the task of every background failure, to count them.
    private let onFailure: @Sendable (StoreEvent.BackgroundTask) -> Void

    init(handler: (@Sendable (StoreEvent) -> Void)?, clock: @escaping @Sendable () -> Date,
         onFailure: @escaping @Sendable (StoreEvent.BackgroundTask) -> Void = { _ in }) {
        self.handler = handler
        self.clock = clock
        self.onFailure = onFailure
        queue.setSpecific(key: Self.onQueue, value: true)
    }

    func emit(_ event: StoreEvent) {
        if case let .backgroundFailure(task, error) = event {
            lastFailure.withLock { $0 = .init(task: task, description: "\(error)", at: clock()) }
            onFailure(task)
        }
        guard let handler else { return }
        queue.async { handler(event) }
    }

    /// Runs background work, reporting a failure as `backgroundFailure(task)`; true when it succeeded.
    @discardableResult
    func attempt<E: Error>(_ task: StoreEvent.BackgroundTask, _ body: () throws(E) -> Void) -> Bool {
        do {
            try body()
            return true
        } catch {
            emit(.backgroundFailure(task, error: error))
            return false
        }
    }

    /// Runs background work that produces a value, reporting a failure as `backgroundFailure(task)`.
    func value<T, E: Error>(_ task: StoreEvent.BackgroundTask, _ body: () throws(E) -> T) -> T? {
        do { return try body() } catch {
            emit(.backgroundFailure(task, error: error))
            return nil
        }
    }

    var lastBackgroundFailure: StoreMetrics.BackgroundFailure? { lastFailure.withLock { $0 } }

    /// Waits until every event emitted so far has been handed to the handler (tests, close).
    /// Called from the handler itself (which runs on the queue), it returns at once.
    func drain() {
        guard DispatchQueue.getSpecific(key: Self.onQueue) == nil else { return }
        queue.sync {}
    }

    private static let onQueue = DispatchSpecificKey<Bool>()
}
