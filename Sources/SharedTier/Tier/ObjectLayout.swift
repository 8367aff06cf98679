import Foundation

/// How an entry is laid out as an S3 object. Every host of a fleet must agree on this, so
/// it is versioned (`imgstore-layout`) and changed only by adding a version.
///
/// Layout 1:
/// - key: `PREFIX` + the lower-case hex SHA-256 of the UTF-8 normalised URL (64 characters);
/// - body: the image bytes, `Content-Type: image/FORMAT`;
/// - metadata (`x-amz-meta-NAME`, every value ASCII):
///
/// | name | value |
/// |---|---|
/// | `imgstore-layout` | `1` |
/// | `imgstore-url` | the URL, percent-encoded (RFC 3986 unreserved kept) |
/// | `imgstore-format` | `jpeg`, `png`, … |
/// | `imgstore-width`, `imgstore-height` | decimal pixels |
/// | `imgstore-origin-etag`, `imgstore-origin-last-modified` | the origin's validators, percent-encoded; absent when it sent none |
/// | `imgstore-expires-ms` | absolute expiry, Unix milliseconds |
/// | `imgstore-fetched-ms` | when the origin answered, Unix milliseconds |
/// | `sha256` | hex SHA-256 of the body (written and checked by `S3Client`) |
///
/// An object whose metadata is missing a field, names another URL, or has another layout
/// is not used (a miss, counted as corrupt).
package enum ObjectLayout {
    package static let version = "1"
    /// S3's limit on the user metadata of one object (AWS: 2 KB); a longer one is not uploaded.
    package static let metadataLimit = 2048

    package static func key(for url: String, prefix: String) -> String {
        prefix + Digest.hex(Digest.sha256(Array(url.utf8)))
    }

    package static func contentType(_ format: String) -> String { "image/\(format)" }

    /// The object metadata that holds `entry`'s facts.
    /// - Throws: `invalidEntry` for a date whole milliseconds since 1970 (`Int64`) cannot hold.
    package static func metadata(of entry: SharedEntry) throws(SharedTierError) -> [String: String] {
        func milliseconds(_ date: Date, _ name: String) throws(SharedTierError) -> Int64 {
            guard let value = Self.milliseconds(date) else {
                throw .invalidEntry(url: entry.url, reason: "its \(name) date (\(date.timeIntervalSince1970) s since 1970) has no whole number of milliseconds an object can hold")
            }
            return value
        }
        var metadata = [
            "imgstore-layout": version,
            "imgstore-url": AWSPercentEncoding.encode(entry.url),
            "imgstore-format": entry.format,
            "imgstore-width": String(entry.width),
            "imgstore-height": String(entry.height),
            "imgstore-expires-ms": String(try milliseconds(entry.expires, "expires")),
            "imgstore-fetched-ms": String(try milliseconds(entry.fetched, "fetched")),
        ]
        if let etag = entry.originETag { metadata["imgstore-origin-etag"] = AWSPercentEncoding.encode(etag) }
        if let modified = entry.originLastModified {
            metadata["imgstore-origin-last-modified"] = AWSPercentEncoding.encode(modified)
        }
        return metadata
    }

    /// The bytes the metadata takes on the wire, as S3 counts them (names and values).
    package static func metadataSize(_ metadata: [String: String]) -> Int {
        metadata.reduce(0) { $0 + "x-amz-meta-".utf8.count + $1.key.utf8.count + $1.value.utf8.count }
            + "x-amz-meta-\(S3Client.checksumMetadataName)".utf8.count + 64
    }

    /// The entry stored in `object` for `url`.
    /// - Throws: `corruptBody` naming the first field that is missing or wrong.
    package static func entry(from object: S3Object, url: String) throws(SharedTierError) -> SharedEntry {
        let metadata = object.head.metadata
        let key = object.head.key
        func field(_ name: String) throws(SharedTierError) -> String {
            guard let value = metadata[name] else { throw .corruptBody(key: key, reason: "its metadata has no \(name)") }
            return value
        }
        func number(_ name: String) throws(SharedTierError) -> Int64 {
            guard let value = Int64(try field(name)), value >= 0 else {
                throw .corruptBody(key: key, reason: "its \(name) is not a non-negative number")
            }
            return value
        }
        guard try field("imgstore-layout") == version else {
            throw .corruptBody(key: key, reason: "layout \(metadata["imgstore-layout"] ?? "") is not \(version)")
        }
        guard try field("imgstore-url").removingPercentEncoding == url else {
            throw .corruptBody(key: key, reason: "it holds another URL")
        }
        return SharedEntry(
            url: url, body: object.body, format: try field("imgstore-format"),
            width: Int(try number("imgstore-width")), height: Int(try number("imgstore-height")),
            originETag: metadata["imgstore-origin-etag"]?.removingPercentEncoding,
            originLastModified: metadata["imgstore-origin-last-modified"]?.removingPercentEncoding,
            expires: date(try number("imgstore-expires-ms")), fetched: date(try number("imgstore-fetched-ms")),
            objectETag: object.head.etag)
    }

    /// `date` in whole milliseconds since 1970 (rounded down), or nil when `Int64` cannot hold
    /// it: not finite, or about 2.9 × 10⁸ years away.
    package static func milliseconds(_ date: Date) -> Int64? {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard milliseconds.isFinite, milliseconds >= -9.2e18, milliseconds <= 9.2e18 else { return nil }
        return Int64(milliseconds)
    }

    private static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
