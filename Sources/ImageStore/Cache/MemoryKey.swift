/// A memory tier key: a cache key with its XXH3-64, computed once.
///
/// `String`'s own hashing (SipHash over every byte) was about 6% of a miss through the memory
/// tier (`imgstore-bench --cases get.miss`, perf); XXH3 over a URL is a few nanoseconds, and the
/// cache then hashes only those eight bytes. Equal keys have equal hashes, so equality checks
/// the hash first and the string only when they match.
struct MemoryKey: Hashable, Sendable {
    let cacheKey: String
    private let digest: UInt64

    init(_ cacheKey: String) {
        self.cacheKey = cacheKey
        digest = Checksum.shortKey(cacheKey)
    }

    static func == (a: MemoryKey, b: MemoryKey) -> Bool { a.digest == b.digest && a.cacheKey == b.cacheKey }

    func hash(into hasher: inout Hasher) { hasher.combine(digest) }
}
