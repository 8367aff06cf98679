import Foundation
import Locking
import Synchronization

/// What the log holds that LMDB does not yet: the newest put or delete per cache key, and a
/// pending remove-all. Reads consult it first, so a put is visible as soon as it is appended
/// and a delete hides older data at once, before the applier reaches LMDB.
final class PendingIndex: Sendable {
    enum Lookup {
        /// The newest change to the key is a put of these bytes.
        case put(EntryRecord, Data)
        /// The key was deleted (or everything was) after what LMDB holds.
        case deleted
        /// The log has nothing newer than LMDB for this key.
        case unknown
    }

    private struct State {
        /// Newest change per cache key, with its sequence number (nil entry: a delete).
        var changes: [String: (sequence: UInt64, put: (EntryRecord, Data)?)] = [:]
        /// The sequence of a pending remove-all; keys it covers and the log does not mention
        /// read as deleted.
        var clearSequence: UInt64?
    }

    private let state = LockedValue(State())
    /// Whether anything is pending: lets the common case (an idle log) skip the lock.
    private let isEmpty = Atomic<Bool>(true)
    /// Every key LMDB or this index may hold (`KeyFilter`): a put sets its key's bits here
    /// under this index's lock, before the put is visible.
    let keys: KeyFilter
    /// A cache key's hash, as LMDB keys it (`DurableTier.keyHasher`).
    private let keyHasher: @Sendable (String) -> [UInt8]

    init(keyHasher: @escaping @Sendable (String) -> [UInt8] = Checksum.key, keyFilterMinimumKeys: Int = KeyFilter.defaultMinimumKeys) {
        self.keyHasher = keyHasher
        keys = KeyFilter(minimumKeys: keyFilterMinimumKeys)
    }

    /// Records a change; called in sequence order (under the log's lock).
    func record(_ entry: LogEntry, sequence: UInt64) {
        let hash: [UInt8]? = switch entry {
        case let .put(record, _), let .renew(record, _): keyHasher(record.cacheKey)
        case .delete, .deleteAll: nil
        }
        state.withLock { state in
            // Before the change is visible: a reader told "absent" by the filter never looks here.
            if let hash { hash.withUnsafeBytes { keys.insert($0) } }
            switch entry {
            case let .put(record, data): state.changes[record.cacheKey] = (sequence, (record, data))
            case let .renew(record, data):
                // As LMDB will apply it: a renewal of bytes a newer pending change replaced or
                // deleted does nothing.
                if let change = state.changes[record.cacheKey] {
                    guard let (pending, _) = change.put, pending.checksum == record.checksum,
                          pending.byteCount == record.byteCount else { return }
                } else if state.clearSequence != nil {
                    return
                }
                state.changes[record.cacheKey] = (sequence, (record, data))
            case let .delete(cacheKey): state.changes[cacheKey] = (sequence, nil)
            case .deleteAll:
                state.changes.removeAll()
                state.clearSequence = sequence
            }
            isEmpty.store(false, ordering: .releasing)
        }
    }

    /// The newest pending change to `cacheKey`. Inlined, so that an idle log (the common case)
    /// costs the read path one atomic load and no `Lookup` (a large enum) is moved.
    @inline(__always)
    func lookup(_ cacheKey: String) -> Lookup {
        if isEmpty.load(ordering: .acquiring) { return .unknown }
        return lockedLookup(cacheKey)
    }

    private func lockedLookup(_ cacheKey: String) -> Lookup {
        state.withLock { state in
            if let change = state.changes[cacheKey] {
                if let (record, data) = change.put { return .put(record, data) }
                return .deleted
            }
            return state.clearSequence == nil ? .unknown : .deleted
        }
    }

    /// LMDB now holds `batch`: forget the changes it covers (unless a newer one replaced them).
    /// Costs the batch's size, not the index's.
    func applied(_ batch: [SequencedEntry]) {
        state.withLock { state in
            for item in batch {
                if case .deleteAll = item.entry {
                    if let clear = state.clearSequence, clear <= item.sequence { state.clearSequence = nil }
                } else if let key = item.entry.cacheKey, let change = state.changes[key], change.sequence <= item.sequence {
                    state.changes.removeValue(forKey: key)
                }
            }
            isEmpty.store(state.changes.isEmpty && state.clearSequence == nil, ordering: .releasing)
        }
    }

    /// Starts rebuilding the key filter: under this index's lock, so no put is recorded between
    /// the start and the pending keys going into the new table. Returns that table, for the
    /// caller to add every key of one LMDB snapshot taken after this returns, and the number
    /// of keys added; nil when a rebuild is already running.
    func beginKeyFilterRebuild(storedKeys: Int) -> (table: KeyFilter.Table, keys: Int)? {
        state.withLock { state in
            let puts = state.changes.values.compactMap(\.put)
            guard let table = keys.beginRebuild(expectedKeys: storedKeys + puts.count) else { return nil }
            for (record, _) in puts { keyHasher(record.cacheKey).withUnsafeBytes { table.insert($0) } }
            return (table, puts.count)
        }
    }

    /// Forgets changes a failed log write lost (they were never acknowledged).
    func discard(_ sequences: [UInt64]) {
        let lost = Set(sequences)
        forget { lost.contains($0) }
    }

    private func forget(where isCovered: (UInt64) -> Bool) {
        state.withLock { state in
            state.changes = state.changes.filter { !isCovered($0.value.sequence) }
            if let clear = state.clearSequence, isCovered(clear) { state.clearSequence = nil }
            isEmpty.store(state.changes.isEmpty && state.clearSequence == nil, ordering: .releasing)
        }
    }
}
