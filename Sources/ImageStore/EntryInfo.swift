import Foundation

/// What the store knows about one entry, without its bytes.
public struct EntryInfo: Sendable, Hashable {
    /// The normalised URL the entry was stored under.
    public var url: String
    /// The image's size in bytes.
    public var byteCount: Int
    /// XXH3-64 of the bytes, checked on every read.
    public var checksum: UInt64
    /// When the entry was put.
    public var createdAt: Date
    /// When the entry expires, or nil for never.
    public var expiresAt: Date?
    /// When the entry was last read or written.
    public var lastAccessedAt: Date
    /// The image's decoded header facts, when it was validated as an image (the same name as
    /// `LoadedImage.facts`).
    public var facts: ImageFacts?
    /// The origin's `ETag` and `Last-Modified`, kept to revalidate the entry when it expires.
    public var validators: CacheValidators

    /// Metadata as the store reports it; public so that tests can build it (for a fake store).
    public init(url: String, byteCount: Int, checksum: UInt64 = 0, createdAt: Date, expiresAt: Date? = nil,
                lastAccessedAt: Date? = nil, facts: ImageFacts? = nil, validators: CacheValidators = CacheValidators()) {
        self.url = url
        self.byteCount = byteCount
        self.checksum = checksum
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.lastAccessedAt = lastAccessedAt ?? createdAt
        self.facts = facts
        self.validators = validators
    }

    /// The old name of `facts`.
    @available(*, deprecated, renamed: "facts")
    public var image: ImageFacts? {
        get { facts }
        set { facts = newValue }
    }
}

/// HTTP cache validators (RFC 9110 §8.8) kept with an entry for conditional requests.
public struct CacheValidators: Sendable, Hashable {
    /// The `ETag` response header, verbatim (quotes and `W/` included).
    public var etag: String?
    /// The `Last-Modified` response header, verbatim.
    public var lastModified: String?

    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }
}

/// An entry's bytes with its metadata, as returned by `ImageStore.get`.
///
/// A value type like any other (setting `data` or `info` changes this copy only), stored as
/// one reference to an immutable `ImageContents`: a memory hit returns the object the memory
/// tier holds, so it copies no `EntryInfo` and retains none of its strings (each an atomic
/// write to an object every reading thread shares).
public struct StoredImage: Sendable, Hashable {
    /// The bytes and the info. Never mutated: a setter replaces it.
    private var contents: ImageContents

    /// The image bytes, exactly as put.
    public var data: Data {
        get { contents.data }
        set { contents = ImageContents(data: newValue, info: contents.info) }
    }
    /// The entry's metadata: its URL, size, checksum, dates, image facts and validators.
    public var info: EntryInfo {
        get { contents.info }
        set { contents = ImageContents(data: contents.data, info: newValue) }
    }
    /// True when the entry had expired and was returned only because the caller allowed stale
    /// entries (`get(_:allowingStale:)`).
    public var isStale: Bool = false
    /// Where the bytes came from.
    public var source: Source = .disk

    /// An entry as `get` returns it; public so that tests can build one (for a fake store).
    public init(data: Data, info: EntryInfo, isStale: Bool = false, source: Source = .disk) {
        self.init(contents: ImageContents(data: data, info: info), isStale: isStale, source: source)
    }

    /// An entry whose bytes and info are `contents` (the memory tier's `DecodedEntry`, shared).
    init(contents: ImageContents, isStale: Bool = false, source: Source) {
        self.contents = contents
        self.isStale = isStale
        self.source = source
    }

    /// Equal when the bytes, the info, `isStale` and `source` are (the same object or not).
    public static func == (lhs: StoredImage, rhs: StoredImage) -> Bool {
        lhs.isStale == rhs.isStale && lhs.source == rhs.source
            && (lhs.contents === rhs.contents || (lhs.data == rhs.data && lhs.info == rhs.info))
    }

    /// Hashes what `==` compares, in the order the synthesised conformance used.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(data)
        hasher.combine(info)
        hasher.combine(isStale)
        hasher.combine(source)
    }

    /// The tier that served a read: `.memory` or `.disk`, never one of the loader's sources.
    public typealias Source = ImageSource
}
