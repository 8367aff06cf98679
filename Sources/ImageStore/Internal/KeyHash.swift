/// A cache key's hash: the 16 bytes that prefix its LMDB entry keys (XXH3-128, `Checksum.key`,
/// or a test's `Configuration.keyHasher`), as two words that, stored in order, are those bytes.
///
/// A read computes it once and hands it to the key filter, the memory tier and the LMDB lookup,
/// so a miss is decided by the key filter before it touches anything another thread writes.
package struct KeyHash: Sendable {
    /// Bytes 0–7 and 8–15, as loaded from memory (native byte order).
    package let first: UInt64
    package let second: UInt64

    /// XXH3-128 of `cacheKey` (`Checksum.key`).
    @inline(__always)
    init(_ cacheKey: String) {
        (first, second) = Checksum.keyWords(cacheKey)
    }

    /// The 16 bytes a test's `Configuration.keyHasher` returned.
    init(bytes: [UInt8]) {
        // Invariant: a key hash is 16 bytes (the entry key's prefix); a test's hasher too.
        precondition(bytes.count == StoreFormat.hashByteCount, "a key hasher returned \(bytes.count) bytes, not 16")
        (first, second) = bytes.withUnsafeBytes {
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
