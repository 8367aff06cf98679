import Foundation

/// Applies recovery's batches on the durable tier's writer queue while the opening thread reads
/// and checks the next segment, so replay runs at the speed of the slower of the two instead of
/// their sum (each commit waits for LMDB's data sync; reading, checksumming and decoding a
/// segment is CPU work that can go on meanwhile).
///
/// Batches are applied in the order they are submitted, each in its own transaction, as the
/// synchronous replay did. Once one fails, the rest are skipped (replay is idempotent: LMDB's
/// applied-seq moves with each batch, so the next open resumes after the last that committed),
/// and the failure is thrown by the next `submit` or by `finish`. At most `limitBytes` of
/// batches wait or run at once, so the queue never holds much more than two segments.
/// `waitUntilFinished` tells recovery when the batches cut from a segment buffer are gone, so
/// it can read the next segment into that buffer in place.
final class ReplayPipeline: Sendable {
    private struct State {
        var inFlightBytes = 0
        var inFlightBatches = 0
        /// Batches done (applied, or skipped after a failure) and released, in submission order.
        var finishedBatches = 0
        var failure: ImageStoreError?
    }

    /// A batch on its way through the writer queue, dropped once applied: the images in it
    /// may be slices of the buffer recovery reads the next segments into (`LogRecovery`), and
    /// a batch still held after it counts as finished would make that read copy the buffer.
    /// Touched by the writer queue only, after `submit` made it.
    private final class Parcel: @unchecked Sendable {
        var batch: [SequencedEntry]
        init(_ batch: [SequencedEntry]) { self.batch = batch }
    }

    private let tier: DurableTier
    private let limitBytes: Int
    private let condition = NSCondition()
    // Guarded by `condition`; never touched without holding it.
    nonisolated(unsafe) private var state = State()

    init(tier: DurableTier, limitBytes: Int = 2 * LogApplier.maxBatchBytes) {
        self.tier = tier
        self.limitBytes = limitBytes
    }

    /// Queues `batch` for the writer queue, first waiting while too much is in flight.
    /// - Throws: the failure of an earlier batch (this one is then not queued).
    func submit(_ batch: [SequencedEntry]) throws(ImageStoreError) {
        let bytes = batch.reduce(0) { $0 + $1.entry.memoryCost }
        condition.lock()
        while state.failure == nil && state.inFlightBatches > 0 && state.inFlightBytes + bytes > limitBytes {
            condition.wait()
        }
        if let failure = state.failure {
            condition.unlock()
            throw failure
        }
        state.inFlightBytes += bytes
        state.inFlightBatches += 1
        condition.unlock()
        let parcel = Parcel(batch)
        tier.writer.async { [self] in
            var failure: ImageStoreError?
            if withLock({ state.failure == nil }) {
                do throws(ImageStoreError) { try tier.apply(parcel.batch) } catch { failure = error }
            }
            parcel.batch = []
            withLock {
                state.inFlightBytes -= bytes
                state.inFlightBatches -= 1
                state.finishedBatches += 1
                if let failure, state.failure == nil { state.failure = failure }
                condition.broadcast()
            }
        }
    }

    /// Waits until the first `count` batches submitted are done (applied, or skipped after a
    /// failure) and no longer held here.
    func waitUntilFinished(_ count: Int) {
        condition.lock()
        defer { condition.unlock() }
        while state.finishedBatches < count { condition.wait() }
    }

    /// Waits until every submitted batch is applied (or skipped after a failure).
    /// - Throws: the first batch's failure, if any.
    func finish() throws(ImageStoreError) {
        if let failure = waitUntilIdle() { throw failure }
    }

    /// Waits until every submitted batch is applied or skipped; returns the first failure.
    @discardableResult
    func waitUntilIdle() -> ImageStoreError? {
        condition.lock()
        defer { condition.unlock() }
        while state.inFlightBatches > 0 { condition.wait() }
        return state.failure
    }

    private func withLock<R>(_ body: () -> R) -> R {
        condition.lock()
        defer { condition.unlock() }
        return body()
    }
}
