import Foundation
import Locking

/// The write path's view of the room left in LMDB's map: the last measurement, minus what puts
/// that are logged but not yet applied will take. A put checks the disk and reserves its share
/// of the map before it is logged, in one step under one lock (`admit`), so writers racing for
/// the last room on the disk or in the map never both get it: an acknowledged put is always
/// appliable.
final class MapSpace: Sendable {
    private struct State {
        /// Map room after what is applied (measured, or lowered since by applied batches).
        var estimate: MapRoom
        /// Room reserved by puts logged and not yet applied.
        var reserved = MapRoom.zero
        /// Log bytes of puts admitted whose append has not returned yet: the disk may not show
        /// them yet, so a racing put's disk check counts them.
        var logging = 0
        var batchesSinceMeasure = 0
    }

    /// Map room no put takes, kept for removals: they copy B-tree pages before they free any
    /// (a removal alone about 20 pages), and what they free is reusable only after the next
    /// commit and checkpoint. Without it a full store could not be emptied: every removal would
    /// fail, and stop the applier.
    static let removalReserve = 256 << 10

    /// Below this estimate, free space is re-measured after every batch.
    private static let measureBelow = 4 << 30
    private let state: LockedValue<State>

    init(measured: MapRoom) { state = LockedValue(State(estimate: measured)) }

    /// The map room `entry` may need once applied: a put's overflow pages plus B-tree pages.
    static func need(_ entry: LogEntry) -> MapRoom {
        switch entry {
        case let .put(_, data): MapRoom(total: need(putting: data.count), tail: run(putting: data.count))
        case .renew: MapRoom(total: 64 << 10, tail: 0)  // the record and its index rows: B-tree pages only
        case .delete, .deleteAll: .zero
        }
    }

    /// Map bytes a put of `byteCount` bytes may need once applied: its overflow pages, an
    /// eighth more, and 64 KiB of B-tree pages.
    static func need(putting byteCount: Int) -> Int { byteCount + byteCount / 8 + (64 << 10) }

    /// The bytes of the pages in a row a put of `byteCount` bytes needs for its bytes (LMDB's
    /// overflow pages: the bytes and a page header, in whole pages; 0 for bytes that fit in a
    /// B-tree page).
    static func run(putting byteCount: Int) -> Int {
        guard byteCount > MapRoom.inlineBytes else { return 0 }
        let page = MapRoom.pageSize
        return (byteCount + MapRoom.pageHeaderBytes + page - 1) / page * page
    }

    /// Admits a write in one step under the lock, so writers racing for the last room never
    /// both get it: `checkDisk(pending)` runs first, told what admitted writes not yet applied
    /// may still take on the disk (their map reservations, and the log bytes of those still
    /// being appended); then `need` bytes of the map are reserved and `logged` log bytes
    /// counted until `appended(logged:)`.
    /// - Returns: false (nothing reserved) when `need` does not fit in the map.
    /// - Throws: what `checkDisk` throws (nothing reserved).
    func admit(need: MapRoom, logged: Int,
               checkDisk: (_ pending: Int) throws(ImageStoreError) -> Void) throws(ImageStoreError) -> Bool {
        try state.withLock { (state) throws(ImageStoreError) -> Bool in
            try checkDisk(state.reserved.total + state.logging)
            guard state.estimate.total - state.reserved.total - need.total >= Self.removalReserve,
                  state.estimate.tail - state.reserved.tail >= need.tail else { return false }
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
    func unreserve(_ need: MapRoom) {
        state.withLock { $0.reserved -= need }
    }

    /// A fresh measurement of the applied state.
    func measured(_ room: MapRoom) {
        state.withLock { state in
            state.estimate = room
            state.batchesSinceMeasure = 0
        }
    }

    /// Whether the next batch should be followed by a measurement (reading LMDB's free list
    /// costs; only worth it when space may run short, or now and then).
    var wantsMeasurement: Bool {
        state.withLock { $0.estimate.total < Self.measureBelow || $0.batchesSinceMeasure >= 255 }
    }

    /// A batch whose puts reserved `need` bytes was applied: its reservations end, and the
    /// estimate becomes `measured`, or (without a measurement) drops by what it reserved.
    func applied(need: MapRoom, measured: MapRoom?) {
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
            assert(state.reserved.total >= 0 && state.reserved.tail >= 0)
        }
    }
}

/// Room in LMDB's map, or what a write needs of it: `total` bytes of pages, of which `tail`
/// must lie past the pages in use. An entry's bytes go in pages in a row (overflow pages),
/// which LMDB takes from its free list only where freed pages lie in a row, and otherwise
/// past the pages in use; so free pages scattered between entries count for the B-tree
/// pages a write copies, never for an entry's bytes.
struct MapRoom: Sendable, Equatable {
    /// All the bytes: the map's unused end and the free pages LMDB can reuse now.
    var total: Int
    /// The map's unused end: what it may grow to, minus the pages in use.
    var tail: Int

    static let zero = MapRoom(total: 0, tail: 0)

    static func += (room: inout MapRoom, other: MapRoom) {
        room.total += other.total
        room.tail += other.tail
    }

    static func -= (room: inout MapRoom, other: MapRoom) {
        room.total -= other.total
        room.tail -= other.tail
    }
    /// Bytes a value may have and still lie in its B-tree page (LMDB puts larger ones in
    /// overflow pages; a quarter of a 4 KiB page, below its limit of about half).
    static let inlineBytes = 1024
    /// LMDB's page size: the system's (`mdb_env_open` takes `sysconf(_SC_PAGE_SIZE)`).
    static let pageSize = max(4096, sysconf(Int32(_SC_PAGESIZE)))
    /// A page's header (`PAGEHDRSZ`), which the first overflow page starts with.
    static let pageHeaderBytes = 16
}
