import Foundation
import ImageStore

/// Every `--json` document is a `Codable` type encoded here: keys sorted, slashes unescaped,
/// absent values `null` (keys are fixed; see `Nullable`), dates ISO 8601 in UTC with
/// milliseconds. The README documents each command's shape.
enum JSONOutput {
    /// The one date format of the tool's output, created once (a formatter per entry cost
    /// `ls --json` half its time).
    static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func date(_ date: Date) -> String { date.formatted(dateStyle) }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(JSONOutput.date(date))
        }
        return encoder
    }()

    /// `value` as one line of JSON.
    static func line(_ value: some Encodable) -> String {
        do { return String(decoding: try encoder.encode(value), as: UTF8.self) } catch {
            // Invariant: the output types hold only strings, numbers, booleans, dates and
            // arrays or dictionaries of them, which always encode.
            preconditionFailure("encoding \(type(of: value)) failed: \(error)")
        }
    }
}

/// An optional that encodes as `null` when absent instead of leaving its key out, so every
/// object of a shape has the same keys.
@propertyWrapper
struct Nullable<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

/// One entry, as `ls --json` lists it and `export`'s manifest records it.
struct EntryJSON: Encodable {
    var url: String
    var bytes: Int
    /// XXH3-64 of the bytes, 16 hex digits.
    var checksum: String
    var createdAt: Date
    @Nullable var expiresAt: Date?
    var lastAccessedAt: Date
    @Nullable var format: String?
    @Nullable var width: Int?
    @Nullable var height: Int?

    init(_ info: EntryInfo) {
        url = info.url
        bytes = info.byteCount
        checksum = String(format: "%016llx", info.checksum)
        createdAt = info.createdAt
        expiresAt = info.expiresAt
        lastAccessedAt = info.lastAccessedAt
        format = info.image?.format.rawValue
        width = info.image?.width
        height = info.image?.height
    }
}

/// One file of `import --json`: its path and URL, whether it was stored, what the image is, and
/// why not.
struct ImportLineJSON: Encodable {
    var path: String
    @Nullable var url: String?
    var ok: Bool
    @Nullable var bytes: Int?
    @Nullable var format: String?
    @Nullable var width: Int?
    @Nullable var height: Int?
    @Nullable var error: String?

    init(path: String, url: String? = nil, ok: Bool, bytes: Int? = nil, facts: ImageFacts? = nil, format: String? = nil, error: String? = nil) {
        self.path = path
        self.url = url
        self.ok = ok
        self.bytes = bytes
        self.format = facts?.format.rawValue ?? format
        width = facts?.width
        height = facts?.height
        self.error = error
    }
}

/// One file checked by `validate --json`.
struct ValidationJSON: Encodable {
    var path: String
    var ok: Bool
    @Nullable var format: String?
    @Nullable var width: Int?
    @Nullable var height: Int?
    /// Bytes after the image's end marker (accepted unless `--strict`).
    @Nullable var trailingBytes: Int?
    @Nullable var error: String?
}
