import Locking

/// The write path's view of the room left in LMDB's map: the last measurement, minus what puts
/// that are logged but not yet applied will take. A put reserves its share before it is logged,
/// under one lock, so writers racing for the last room never both get it: an acknowledged put
/// is always appliable.
final class MapSpace: Sendable {
    private struct State {
        /// Map bytes free after what is applied (measured, or lowered since by applied batches).
        var estimate: Int
        /// Bytes reserved by puts logged and not yet applied.
        var reserved = 0
        var batchesSinceMeasure = 0
    }

    /// Below this estimate, free space is re-measured after every batch.
    private static let measureBelow = 4 << 30
    private let state: LockedValue<State>

    init(measured: Int) { state = LockedValue(State(estimate: measured)) }

    /// Map bytes `entry` may need once applied: a put's overflow pages plus B-tree pages.
    static func need(_ entry: LogEntry) -> Int {
        switch entry {
        case let .put(_, data): data.count + data.count / 8 + (64 << 10)
        case .renew: 64 << 10  // the record and its index rows: B-tree pages only
        case .delete, .deleteAll: 0
        }
    }

    /// Reserves `bytes`; false (nothing reserved) when they do not fit.
    func reserve(_ bytes: Int) -> Bool {
        state.withLock { state in
            guard state.estimate - state.reserved >= bytes else { return false }
            state.reserved += bytes
            return true
        }
    }

    /// Bytes reserved by puts logged and not yet applied: what applying them may still add to
    /// LMDB's file, so room on the disk that a new put must leave to them.
    var reservedBytes: Int { state.withLock { $0.reserved } }

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
