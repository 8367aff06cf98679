import CXXHash

/// Checksums and key hashes, from xxHash (Debian's libxxhash): XXH3 is made for exactly
/// this — fast on large buffers, well distributed on short ones.
enum Checksum {
    /// XXH3-64 of a blob, as stored in its entry record.
    static func blob(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        XXH3_64bits(bytes.baseAddress, bytes.count)
    }

    /// XXH3-128 of a cache key: the 16-byte prefix of its entry key.
    static func key(_ key: String) -> [UInt8] {
        var key = key
        let hash = key.withUTF8 { XXH3_128bits($0.baseAddress, $0.count) }
        var out = [UInt8]()
        out.reserveCapacity(StoreFormat.hashByteCount)
        withUnsafeBytes(of: hash.high64.bigEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: hash.low64.bigEndian) { out.append(contentsOf: $0) }
        return out
    }
}
