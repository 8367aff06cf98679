import Foundation

/// What a HEAD (or the head of a GET) tells about an object.
public struct S3ObjectHead: Sendable, Equatable {
    /// The object's key in the bucket.
    public var key: String
    /// The server's ETag, quotes included, as `If-Match` wants it back. For a plain PUT it is
    /// the MD5 of the bytes: never send it to an origin as the origin's validator.
    public var etag: String
    /// The body's length in bytes.
    public var contentLength: Int
    /// The object's `Content-Type`.
    public var contentType: String?
    /// The user metadata: `x-amz-meta-NAME` headers as `NAME` (lower-case) → value.
    public var metadata: [String: String]

    /// The hex SHA-256 of the body that `S3Client.put` recorded, checked on every GET.
    public var bodySHA256: String? { metadata[S3Client.checksumMetadataName] }
}

/// An object read whole.
public struct S3Object: Sendable, Equatable {
    /// Its head.
    public var head: S3ObjectHead
    /// Its bytes, checked against `head.contentLength` and `head.bodySHA256`.
    public var body: Data
}

/// The precondition of a write: how it races other hosts writing the same key.
public enum S3WriteCondition: Sendable, Equatable {
    /// Write whatever is there.
    case unconditional
    /// Create only: `If-None-Match: *`. Loses (412) when the key exists.
    case create
    /// Replace only the version read: `If-Match: etag`. Loses (412) when another host wrote
    /// since.
    case replace(etag: String)
}

/// What a conditional write did. Losing the race is an outcome, not an error: another host
/// stored the key first, and its copy is as good.
public enum S3WriteOutcome: Sendable, Equatable {
    /// Written; the object's new ETag.
    case stored(etag: String)
    /// Not written: the precondition failed (HTTP 412), because another host won.
    case preconditionFailed
}

/// One object in a listing.
public struct S3ListedObject: Sendable, Equatable {
    public var key: String
    public var size: Int
    public var etag: String
}

/// One page of `ListObjectsV2`.
public struct S3ListPage: Sendable, Equatable {
    /// The objects of this page, in key order.
    public var objects: [S3ListedObject]
    /// The token for the next page; nil on the last.
    public var nextContinuationToken: String?
}
