/// A cache key's hash: the 16 bytes that prefix its LMDB entry keys (XXH3-128, `Checksum.key`,
/// or a test's `Configuration.keyHasher`), as two words that, stored in order, are those bytes.
///
/// A read computes it once and hands it to the key filter, the memory tier and the LMDB lookup,
/// so a miss is decided by the key filter before it touches anything another thread writes.
package struct KeyHash: Sendable {
    /// Bytes 0–7 and 8–15, as loaded from memory (native byte order).
    package let first: UInt64
    package let second: UInt64

    /// The hash of `cacheKey`: XXH3-128 (`Checksum.key`), or what `customHasher` (a test's
    /// `Configuration.keyHasher`) returns. The one place a key's hash is computed.
    @inline(__always)
    init(_ cacheKey: String, customHasher: (@Sendable (String) -> [UInt8])?) {
        (first, second) = if let customHasher { Self.words(customHasher(cacheKey)) } else { Checksum.keyWords(cacheKey) }
    }

    /// The 16 bytes a test's `Configuration.keyHasher` returned, as two words.
    private static func words(_ bytes: [UInt8]) -> (UInt64, UInt64) {
        // Invariant: a key hash is 16 bytes (the entry key's prefix); a test's hasher too.
        precondition(bytes.count == StoreFormat.hashByteCount, "a key hasher returned \(bytes.count) bytes, not 16")
        return bytes.withUnsafeBytes {
            ($0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }
    }

    /// Writes the 16 bytes at the start of `buffer`.
    @inline(__always)
    func store(into buffer: UnsafeMutableRawBufferPointer) {
        buffer.storeBytes(of: first, toByteOffset: 0, as: UInt64.self)
        buffer.storeBytes(of: second, toByteOffset: 8, as: UInt64.self)
    }
}
