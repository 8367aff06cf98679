import CStreamingCopy
import CXXHash
import Foundation

/// Checksums and key hashes, from xxHash (Debian's libxxhash): XXH3 is made for exactly
/// this — fast on large buffers, well distributed on short ones. Every XXH3 call of the store
/// (blobs, keys, log records, the synced watermark) goes through here.
///
/// On x86-64 the long-input functions call libxxhash's `_dispatch` entry points, which pick
/// AVX2 or AVX-512 at run time where the CPU has them: the same values as the plain SSE2
/// functions (the algorithm does not depend on the instruction set), about 2.5 times as fast
/// on an image-sized buffer here.
///
/// Package-visible so `imgstore-bench` can measure the bounds of the read rows with the very
/// functions a read runs (raw LMDB plus `blob` or `copyingBlob`).
package enum Checksum {
    /// XXH3-64 of a blob, as stored in its entry record.
    package static func blob(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        xxh3(bytes.baseAddress, bytes.count)
    }

    /// XXH3-64 of `count` bytes at `start`.
    static func xxh3(_ start: UnsafeRawPointer?, _ count: Int) -> UInt64 {
        #if arch(x86_64)
        XXH3_64bits_dispatch(start, count)
        #else
        XXH3_64bits(start, count)
        #endif
    }

    /// XXH3-64 of `count` bytes at `start`, with `seed`.
    static func xxh3(_ start: UnsafeRawPointer?, _ count: Int, seed: UInt64) -> UInt64 {
        #if arch(x86_64)
        XXH3_64bits_withSeed_dispatch(start, count, seed)
        #else
        XXH3_64bits_withSeed(start, count, seed)
        #endif
    }

    /// Feeds `count` bytes at `start` to a streaming XXH3-64 `state`.
    static func update(_ state: OpaquePointer, _ start: UnsafeRawPointer?, _ count: Int) {
        #if arch(x86_64)
        _ = XXH3_64bits_update_dispatch(state, start, count)
        #else
        _ = XXH3_64bits_update(state, start, count)
        #endif
    }

    /// A copy of `bytes` and their XXH3-64 (the same value as `blob`), reading the source from memory once.
    ///
    /// Hashing and then copying would read every byte twice, and for an image larger than the caches the second pass
    /// would come from memory again. So a large blob goes in chunks that fit in L2: each is hashed (streaming XXH3)
    /// where it lies, then copied while it is still in the cache. Hashing first measured faster than copying first
    /// (`Tools/read-bound`), and it lets the copy use streaming stores. A small blob is hashed whole and copied
    /// whole (both from the source).
    ///
    /// Invariant: the copy holds the bytes hashed. Both read `bytes` in turn, and the caller's `bytes` are a read
    /// transaction's mapped blob, which LMDB never rewrites while the transaction is open (a writer reuses only pages
    /// no open reader can reach; compaction swaps the file only when no transaction is open). This holds while only
    /// LMDB writes `data.mdb`: a write from outside it (another tool, a restore over a live store) could land between
    /// the hash and the copy of one chunk, where hashing the copy would have caught it.
    ///
    /// - Parameter streaming: write the copy with streaming stores (`imgstore_streaming_copy`), for a copy the
    ///   memory tier may keep (one within its entry limit; a fill can still decline it). Its buffer is memory the
    ///   caches no longer hold (what evictions freed), and an ordinary store first reads each of its lines from
    ///   memory. The copy is not in the caches afterwards, so a caller that reads it at once reads it from memory;
    ///   that still measured faster in all (`Tools/read-bound` measures the copies; the README gives the figures).
    package static func copyingBlob(_ bytes: UnsafeRawBufferPointer, streaming: Bool = false) -> (Data, UInt64) {
        guard bytes.count > fusedChunkBytes, let state = XXH3_createState() else {
            guard streaming, bytes.count > 0 else { return (Data(bytes), blob(bytes)) }
            let checksum = blob(bytes)
            return (streamingCopy(bytes), checksum)
        }
        defer { XXH3_freeState(state) }
        XXH3_64bits_reset(state)
        let copy = allocate(bytes.count)
        var offset = 0
        while offset < bytes.count {
            let n = min(fusedChunkBytes, bytes.count - offset)
            let source = bytes.baseAddress! + offset
            update(state, source, n)
            if streaming {
                imgstore_streaming_copy(copy + offset, source, n)
            } else {
                (copy + offset).copyMemory(from: source, byteCount: n)
            }
            offset += n
        }
        return (Data(bytesNoCopy: copy, count: bytes.count, deallocator: .free), XXH3_64bits_digest(state))
    }

    /// A copy of `bytes` (not empty) written with streaming stores.
    private static func streamingCopy(_ bytes: UnsafeRawBufferPointer) -> Data {
        let copy = allocate(bytes.count)
        imgstore_streaming_copy(copy, bytes.baseAddress!, bytes.count)
        return Data(bytesNoCopy: copy, count: bytes.count, deallocator: .free)
    }

    /// `count` (> 0) bytes from `malloc`, for a `Data` that frees them.
    private static func allocate(_ count: Int) -> UnsafeMutableRawPointer {
        // Invariant: `malloc` never returns nil for a nonzero size on Linux (overcommit); trap if it ever does.
        malloc(count)!
    }

    /// Bytes per hash-and-copy step of `copyingBlob`: well inside a 512 KiB L2, with room for the destination's lines.
    static let fusedChunkBytes = 64 << 10

    /// XXH3-128 of a cache key: the 16-byte prefix of its entry key.
    static func key(_ key: String) -> [UInt8] {
        let words = keyWords(key)
        return [UInt8](unsafeUninitializedCapacity: StoreFormat.hashByteCount) { buffer, count in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            raw.storeBytes(of: words.first, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: words.second, toByteOffset: 8, as: UInt64.self)
            count = StoreFormat.hashByteCount
        }
    }

    /// `key(key)` as two words that, stored in this order, are its 16 bytes.
    @inline(__always)
    static func keyWords(_ key: String) -> (first: UInt64, second: UInt64) {
        // A native string's bytes in place (no copy of the string, so no retain of its storage,
        // a line every thread reading the same key would write); others through a copy.
        let hash = key.utf8.withContiguousStorageIfAvailable { XXH3_128bits($0.baseAddress, $0.count) }
            ?? { var copy = key; return copy.withUTF8 { XXH3_128bits($0.baseAddress, $0.count) } }()
        return (hash.high64.bigEndian, hash.low64.bigEndian)
    }
}
