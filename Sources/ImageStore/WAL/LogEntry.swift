import Foundation

/// One change the log carries, decoded: what the applier writes to LMDB and what the pending
/// index serves before that.
enum LogEntry: Sendable {
    case put(EntryRecord, Data)
    /// A new record for an entry whose bytes stay as they are (a `304 Not Modified`): only the
    /// record is logged. Applied only while LMDB holds those very bytes (same checksum and
    /// byte count); otherwise the entry was replaced or removed meanwhile and it does nothing.
    /// `bytes` are the entry's bytes, kept in memory for reads until the record is applied,
    /// never logged: a renew read back from the log carries none (replay only applies records).
    case renew(EntryRecord, bytes: Data)
    case delete(cacheKey: String)
    case deleteAll

    /// The cache key the entry changes; nil for a remove-all.
    var cacheKey: String? {
        switch self {
        case let .put(record, _), let .renew(record, _): record.cacheKey
        case let .delete(cacheKey): cacheKey
        case .deleteAll: nil
        }
    }

    var type: WALFormat.RecordType {
        switch self {
        case .put: .put
        case .renew: .renew
        case .delete: .delete
        case .deleteAll: .deleteAll
        }
    }

    /// The payload as parts to hand to `writev` (the image bytes are not copied).
    func payloadParts() -> [Data] {
        switch self {
        case let .put(record, data):
            let encoded = record.encoded()
            var prefix = Data(capacity: 4 + encoded.count)
            withUnsafeBytes(of: UInt32(encoded.count).littleEndian) { prefix.append(contentsOf: $0) }
            prefix.append(contentsOf: encoded)
            return [prefix, data]
        case let .renew(record, _):
            return [Data(record.encoded())]
        case let .delete(cacheKey):
            return [Data(cacheKey.utf8)]
        case .deleteAll:
            return []
        }
    }

    /// Decodes a payload of `type`; nil when it breaks validity condition 6. A put's image is
    /// what `sharedImage` returns for its range (relative to `payload`), when it is given (a
    /// caller whose payload lies in a `Data` passes a slice of it); otherwise a copy.
    init?(type: WALFormat.RecordType, payload: UnsafeRawBufferPointer, sharedImage: ((Range<Int>) -> Data)? = nil) {
        switch type {
        case .put:
            guard let length = ByteReader(bytes: payload).integer(at: 0, as: UInt32.self).map(Int.init),
                  4 + length <= payload.count,
                  let record = EntryRecord(decoding: UnsafeRawBufferPointer(rebasing: payload[4..<(4 + length)])),
                  record.byteCount == payload.count - 4 - length
            else { return nil }
            let range = (4 + length)..<payload.count
            self = .put(record, sharedImage?(range) ?? Data(payload[range]))
        case .renew:
            guard let record = EntryRecord(decoding: payload) else { return nil }
            self = .renew(record, bytes: Data())
        case .delete:
            guard let key = String(validating: payload, as: UTF8.self), !key.isEmpty else { return nil }
            self = .delete(cacheKey: key)
        case .deleteAll:
            guard payload.isEmpty else { return nil }
            self = .deleteAll
        }
    }

    /// Bytes this entry holds in memory until applied (for back-pressure accounting).
    var memoryCost: Int {
        switch self {
        case let .put(record, data), let .renew(record, data): data.count + record.url.utf8.count + record.cacheKey.utf8.count + 128
        case let .delete(key): key.utf8.count + 64
        case .deleteAll: 64
        }
    }
}

/// A log entry with its place in the log.
struct SequencedEntry: Sendable {
    var sequence: UInt64
    var entry: LogEntry
}
