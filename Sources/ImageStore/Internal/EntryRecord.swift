import ImageValidation

/// An entry's metadata as stored in the `entries` database; the byte layout is in
/// `StoreFormat.swift`. Times are milliseconds since the Unix epoch.
struct EntryRecord: Sendable, Hashable {
    var url: String
    /// The cache key the entry is found by: the URL through the configured key function.
    var cacheKey: String
    var byteCount: Int
    var checksum: UInt64
    var createdAt: Int64
    var expiresAt: Int64?
    var lastAccess: Int64
    var facts: ImageFacts?
    /// The origin's cache validators, for conditional revalidation.
    var validators = CacheValidators()
    /// For sliding expiry: each read moves `expiresAt` to the read time plus this many
    /// seconds. 0 for a fixed expiry.
    var slidingSeconds: UInt32 = 0

    func encoded() -> [UInt8] {
        let urlBytes = Array(url.utf8)
        let keyBytes = cacheKey == url ? [] : Array(cacheKey.utf8)
        let etagBytes = Array((validators.etag ?? "").utf8.prefix(Int(UInt16.max)))
        let modifiedBytes = Array((validators.lastModified ?? "").utf8.prefix(Int(UInt16.max)))
        var writer = ByteWriter(capacity: StoreFormat.recordHeaderByteCount + urlBytes.count + keyBytes.count
                                + etagBytes.count + modifiedBytes.count)
        writer.append(StoreFormat.recordVersion)
        writer.append(UInt8((expiresAt != nil ? 1 : 0) | (facts != nil ? 2 : 0)))
        writer.append(UInt16(0))
        writer.append(UInt32(urlBytes.count))
        writer.append(UInt32(keyBytes.count))
        writer.append(UInt16(etagBytes.count))
        writer.append(UInt16(modifiedBytes.count))
        writer.append(UInt64(byteCount))
        writer.append(checksum)
        writer.append(createdAt)
        writer.append(expiresAt ?? 0)
        writer.append(lastAccess)
        writer.append(UInt8(facts.map { Self.formatCode($0.format) } ?? 0))
        writer.append(UInt8(clamping: facts?.bitDepth ?? 0))
        writer.append(UInt8(clamping: facts?.components ?? 0))
        writer.append(UInt8(clamping: facts?.colorType ?? 0xFF))
        writer.append(UInt32(clamping: facts?.width ?? 0))
        writer.append(UInt32(clamping: facts?.height ?? 0))
        writer.append(UInt32(clamping: facts?.frameCount ?? 0))
        writer.append(UInt8(facts?.isInterlaced == true ? 1 : 0))
        writer.appendZeros(3)
        writer.append(slidingSeconds)
        // Invariant: the fixed header is exactly as long as the format says.
        assert(writer.bytes.count == StoreFormat.recordHeaderByteCount)
        writer.append(urlBytes)
        writer.append(keyBytes)
        writer.append(etagBytes)
        writer.append(modifiedBytes)
        return writer.bytes
    }

    /// Decodes a record, or returns nil when the bytes break a validity rule of the format.
    init?(decoding bytes: UnsafeRawBufferPointer) {
        let reader = ByteReader(bytes: bytes)
        guard reader.integer(at: 0, as: UInt8.self) == StoreFormat.recordVersion,
              let flags = reader.integer(at: 1, as: UInt8.self),
              let urlCount = reader.integer(at: 4, as: UInt32.self).map(Int.init),
              let keyCount = reader.integer(at: 8, as: UInt32.self).map(Int.init),
              let etagCount = reader.integer(at: 12, as: UInt16.self).map(Int.init),
              let modifiedCount = reader.integer(at: 14, as: UInt16.self).map(Int.init),
              bytes.count == StoreFormat.recordHeaderByteCount + urlCount + keyCount + etagCount + modifiedCount,
              let byteCount = reader.integer(at: 16, as: UInt64.self), byteCount <= UInt64(Int.max),
              let checksum = reader.integer(at: 24, as: UInt64.self),
              let createdAt = reader.integer(at: 32, as: Int64.self),
              let expiresAt = reader.integer(at: 40, as: Int64.self),
              let lastAccess = reader.integer(at: 48, as: Int64.self),
              let url = reader.string(at: StoreFormat.recordHeaderByteCount, count: urlCount)
        else { return nil }
        self.url = url
        if keyCount == 0 {
            cacheKey = url
        } else {
            guard let key = reader.string(at: StoreFormat.recordHeaderByteCount + urlCount, count: keyCount) else { return nil }
            cacheKey = key
        }
        let validatorsStart = StoreFormat.recordHeaderByteCount + urlCount + keyCount
        guard let etag = reader.string(at: validatorsStart, count: etagCount),
              let modified = reader.string(at: validatorsStart + etagCount, count: modifiedCount)
        else { return nil }
        validators = CacheValidators(etag: etag.isEmpty ? nil : etag, lastModified: modified.isEmpty ? nil : modified)
        self.byteCount = Int(byteCount)
        self.checksum = checksum
        self.createdAt = createdAt
        self.expiresAt = flags & 1 != 0 ? expiresAt : nil
        self.lastAccess = lastAccess
        self.slidingSeconds = reader.integer(at: 76, as: UInt32.self)!
        if flags & 2 != 0 {
            let colorType = Int(reader.integer(at: 59, as: UInt8.self)!)
            let frames = Int(reader.integer(at: 68, as: UInt32.self)!)
            facts = ImageFacts(
                format: Self.format(code: reader.integer(at: 56, as: UInt8.self)!),
                width: Int(reader.integer(at: 60, as: UInt32.self)!),
                height: Int(reader.integer(at: 64, as: UInt32.self)!),
                bitDepth: Int(reader.integer(at: 57, as: UInt8.self)!),
                components: Int(reader.integer(at: 58, as: UInt8.self)!),
                colorType: colorType == 0xFF ? nil : colorType,
                isInterlaced: reader.integer(at: 72, as: UInt8.self)! != 0,
                frameCount: frames == 0 ? nil : frames)
        } else {
            facts = nil
        }
    }

    init(url: String, cacheKey: String, byteCount: Int, checksum: UInt64, createdAt: Int64,
         expiresAt: Int64?, lastAccess: Int64, facts: ImageFacts?, validators: CacheValidators = CacheValidators()) {
        self.validators = validators
        self.url = url
        self.cacheKey = cacheKey
        self.byteCount = byteCount
        self.checksum = checksum
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.lastAccess = lastAccess
        self.facts = facts
    }

    private static let formats: [ImageFormat] = [.unknown, .png, .jpeg, .gif, .webp]
    private static func formatCode(_ format: ImageFormat) -> Int { formats.firstIndex(of: format) ?? 0 }
    private static func format(code: UInt8) -> ImageFormat { Int(code) < formats.count ? formats[Int(code)] : .unknown }
}
