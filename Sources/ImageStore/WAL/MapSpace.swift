import Locking

/// The write path's view of the room left in LMDB's map: the last measurement, minus what puts
/// that are logged but not yet applied will take. A put checks the disk and reserves its share
/// of the map before it is logged, in one step under one lock (`admit`), so writers racing for
/// the last room on the disk or in the map never both get it: an acknowledged put is always
/// appliable.
final class MapSpace: Sendable {
    private struct State {
        /// Map bytes free after what is applied (measured, or lowered since by applied batches).
        var estimate: Int
        /// Bytes reserved by puts logged and not yet applied.
        var reserved = 0
        /// Log bytes of puts admitted whose append has not returned yet: the disk may not show
        /// them yet, so a racing put's disk check counts them.
        var logging = 0
        var batchesSinceMeasure = 0
    }

    /// Below this estimate, free space is re-measured after every batch.
    private static let measureBelow = 4 << 30
    private let state: LockedValue<State>

    init(measured: Int) { state = LockedValue(State(estimate: measured)) }

    /// Map bytes `entry` may need once applied: a put's overflow pages plus B-tree pages.
    static func need(_ entry: LogEntry) -> Int {
        switch entry {
        case let .put(_, data): need(putting: data.count)
        case .renew: 64 << 10  // the record and its index rows: B-tree pages only
        case .delete, .deleteAll: 0
        }
    }

    /// Map bytes a put of `byteCount` bytes may need once applied: its overflow pages, an
    /// eighth more, and 64 KiB of B-tree pages.
    static func need(putting byteCount: Int) -> Int { byteCount + byteCount / 8 + (64 << 10) }

    /// Admits a write in one step under the lock, so writers racing for the last room never
    /// both get it: `checkDisk(pending)` runs first, told what admitted writes not yet applied
    /// may still take on the disk (their map reservations, and the log bytes of those still
    /// being appended); then `need` bytes of the map are reserved and `logged` log bytes
    /// counted until `appended(logged:)`.
    /// - Returns: false (nothing reserved) when `need` does not fit in the map.
    /// - Throws: what `checkDisk` throws (nothing reserved).
    func admit(need: Int, logged: Int,
               checkDisk: (_ pending: Int) throws(ImageStoreError) -> Void) throws(ImageStoreError) -> Bool {
        try state.withLock { (state) throws(ImageStoreError) -> Bool in
            try checkDisk(state.reserved + state.logging)
            guard state.estimate - state.reserved >= need else { return false }
            state.reserved += need
            state.logging += logged
            return true
        }
    }

    /// The append of a write admitted with `logged` log bytes returned (or failed): the disk
    /// now shows what it wrote.
    func appended(logged: Int) {
        state.withLock { state in
            state.logging -= logged
            // Invariant: only admitted log bytes are released.
            assert(state.logging >= 0)
        }
    }

    /// Gives back a reservation whose entry was never logged.
    func unreserve(_ bytes: Int) {
        state.withLock { $0.reserved -= bytes }
    }

    /// A fresh measurement of the applied state.
    func measured(_ bytes: Int) {
        state.withLock { state in
            state.estimate = bytes
            state.batchesSinceMeasure = 0
        }
    }

    /// Whether the next batch should be followed by a measurement (reading LMDB's free list
    /// costs; only worth it when space may run short, or now and then).
    var wantsMeasurement: Bool {
        state.withLock { $0.estimate < Self.measureBelow || $0.batchesSinceMeasure >= 255 }
    }

    /// A batch whose puts reserved `need` bytes was applied: its reservations end, and the
    /// estimate becomes `measured`, or (without a measurement) drops by what it reserved.
    func applied(need: Int, measured: Int?) {
        state.withLock { state in
            if let measured {
                state.estimate = measured
                state.batchesSinceMeasure = 0
            } else {
                state.estimate -= need
                state.batchesSinceMeasure += 1
            }
            state.reserved -= need
            // Invariant: only reserved bytes are released.
            assert(state.reserved >= 0)
        }
    }
}
