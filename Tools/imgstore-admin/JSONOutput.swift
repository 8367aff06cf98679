import Foundation
import ImageStore

/// Every `--json` document is a `Codable` type encoded here: keys sorted, slashes unescaped,
/// absent values `null` (keys are fixed; see `Nullable`), dates ISO 8601 in UTC with
/// milliseconds. The README documents each command's shape.
enum JSONOutput {
    /// The one date format of the tool's output, created once (a formatter per entry cost
    /// `ls --json` half its time).
    static let dateStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// `date` to the nearest millisecond. The style truncates, and a `Date` made from whole
    /// milliseconds (as the store's are) often sits a hair below one, which printed half of all
    /// dates a millisecond early (and export → import then moved them back by one). Half a
    /// millisecond on the rounded value makes the truncation land on it.
    static func date(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        return Date(timeIntervalSince1970: (milliseconds + 0.5) / 1000).formatted(dateStyle)
    }

    /// A checksum as the output writes it: 16 hex digits.
    static func hex(_ checksum: UInt64) -> String { String(format: "%016llx", checksum) }

    /// A date as `date(_:)` writes it (also without the fractional seconds), or nil.
    static func parseDate(_ text: String) -> Date? {
        (try? dateStyle.parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
    }

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
        checksum = JSONOutput.hex(info.checksum)
        createdAt = info.createdAt
        expiresAt = info.expiresAt
        lastAccessedAt = info.lastAccessedAt
        format = info.facts?.format.rawValue
        width = info.facts?.width
        height = info.facts?.height
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

/// `manifest.json` as `import --manifest` reads it: export's shape (`ExportCommand.Manifest`),
/// or a hand-written one with only `"file"` and `"url"` per entry. A field of the wrong type
/// does not fail the manifest: it is the `problem` of its entry, which is then skipped.
struct ManifestInputJSON: Decodable {
    var entries: [Entry]

    /// One entry. Every key export writes is read with its type, so `"bytes": "5"` is an
    /// error rather than a check silently not made; other keys are ignored.
    struct Entry: Decodable {
        var file: String
        var url: String
        var bytes: Int?
        /// XXH3-64, from 16 hex digits.
        var checksum: UInt64?
        var createdAt: Date?
        /// nil: no `"expiresAt"` key (a hand-written manifest); `.some(nil)`: null, never expires.
        var expiresAt: Date??
        /// Why the entry cannot be imported: the first field of the wrong type.
        var problem: String?

        private enum Keys: String, CodingKey {
            case file, url, bytes, checksum, createdAt, expiresAt, lastAccessedAt, format, width, height
        }

        /// An entry without a `"file"` or `"url"` string: the manifest itself is malformed.
        struct MissingName: Error {
            /// The entry's position in `"entries"`.
            var index: Int?
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            guard let file = try? container.decode(String.self, forKey: .file),
                  let url = try? container.decode(String.self, forKey: .url)
            else { throw MissingName(index: decoder.codingPath.last?.intValue) }
            self.file = file
            self.url = url
            var problem: String?
            /// `key`'s value when present and not null; of the wrong type, the entry's problem.
            func read<T: Decodable>(_ key: Keys, as type: T.Type, _ kind: String) -> T? {
                do { return try container.decodeIfPresent(type, forKey: key) } catch {
                    if problem == nil { problem = "the manifest's \"\(key.stringValue)\" is not \(kind)" }
                    return nil
                }
            }
            func date(_ key: Keys) -> Date? {
                guard let text = read(key, as: String.self, "an ISO 8601 date") else { return nil }
                if let date = JSONOutput.parseDate(text) { return date }
                if problem == nil { problem = "the manifest's \"\(key.stringValue)\" is not an ISO 8601 date: \(text)" }
                return nil
            }
            bytes = read(.bytes, as: Int.self, "a whole number")
            if let hex = read(.checksum, as: String.self, "a string of 16 hex digits") {
                checksum = hex.utf8.count == 16 ? UInt64(hex, radix: 16) : nil
                if checksum == nil, problem == nil { problem = "the manifest's \"checksum\" is not 16 hex digits: \(hex)" }
            }
            createdAt = date(.createdAt)
            if container.contains(.expiresAt) {
                if try container.decodeNil(forKey: .expiresAt) {
                    expiresAt = .some(nil)
                } else if let date = date(.expiresAt) {
                    expiresAt = .some(date)
                }
            }
            // Not used by import, but export writes them: a wrong type means a damaged manifest.
            _ = date(.lastAccessedAt)
            _ = read(.format, as: String.self, "a string")
            _ = read(.width, as: Int.self, "a whole number")
            _ = read(.height, as: Int.self, "a whole number")
            self.problem = problem
        }
    }
}
