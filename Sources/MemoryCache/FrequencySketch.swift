/// A count-min sketch of how often keys were used recently, for W-TinyLFU admission.
///
/// Four saturating 4-bit counts (kept in bytes, capped at 15) per key, at positions derived from the key's hash; the
/// estimate is their minimum, so collisions only ever overestimate. After about as many increments as there are
/// counters, every counter is halved ("ageing"), so the sketch follows a popularity that changes over time.
@usableFromInline
struct FrequencySketch: Sendable {
    @usableFromInline var counters: [UInt8]
    /// `64 - log2(counters.count)`.
    @usableFromInline var shift: UInt64
    @usableFromInline var additions = 0

    init(expectedEntries: Int) {
        counters = []
        shift = 64
        resize(for: expectedEntries)
    }

    /// Grows the table (forgetting the counts) when the shard holds more entries than it was sized for.
    @inlinable
    mutating func reserve(entries: Int) {
        if entries &* 8 > counters.count { resize(for: entries &* 2) }
    }

    @usableFromInline
    mutating func resize(for entries: Int) {
        var size = 64
        while size < entries * 8 { size <<= 1 }
        counters = [UInt8](repeating: 0, count: size)
        shift = UInt64(64 - size.trailingZeroBitCount)
        additions = 0
    }

    @inlinable
    func position(_ hash: Int, _ row: UInt64) -> Int {
        let mixed = (UInt64(truncatingIfNeeded: hash) &+ row &* 0x9E37_79B9_7F4A_7C15) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: mixed >> shift)
    }

    /// The estimated number of recent uses of the key with this hash (0...15).
    @inlinable
    func frequency(_ hash: Int) -> UInt8 {
        var result: UInt8 = 15
        for row in 0..<4 as Range<UInt64> { result = min(result, counters[position(hash, row)]) }
        return result
    }

    /// Counts one use of the key with this hash.
    @inlinable
    mutating func increment(_ hash: Int) {
        var added = false
        for row in 0..<4 as Range<UInt64> {
            let i = position(hash, row)
            if counters[i] < 15 {
                counters[i] &+= 1
                added = true
            }
        }
        if added {
            additions &+= 1
            if additions >= counters.count { age() }
        }
    }

    @usableFromInline
    mutating func age() {
        for i in counters.indices { counters[i] >>= 1 }
        additions /= 2
    }
}
