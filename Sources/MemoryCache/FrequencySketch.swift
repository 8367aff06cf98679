/// A count-min sketch of how often keys were used recently, for W-TinyLFU admission.
///
/// Layout (as in Caffeine's block sketch): one 64-bit word per expected entry, sixteen 4-bit counters per word. A key
/// picks one word by its hash and one counter in each quarter of that word, so an increment or an estimate touches a
/// single word. The estimate is the minimum of the key's four counters, so collisions only ever overestimate.
/// Counters saturate at 15; after ten increments per word every counter is halved ("ageing"), so the sketch follows a
/// popularity that changes over time.
@usableFromInline
struct FrequencySketch: Sendable {
    @usableFromInline var words: [UInt64]
    /// `64 - log2(words.count)`.
    @usableFromInline var shift: UInt64
    @usableFromInline var additions = 0
    @usableFromInline var sampleSize = 0

    init(expectedEntries: Int) {
        words = []
        shift = 64
        resize(for: expectedEntries)
    }

    /// Grows the table (forgetting the counts) when the shard holds more entries than it was sized for.
    @inlinable
    mutating func reserve(entries: Int) {
        if entries > words.count { resize(for: entries &* 2) }
    }

    @usableFromInline
    mutating func resize(for entries: Int) {
        var size = 16
        while size < entries { size <<= 1 }
        words = [UInt64](repeating: 0, count: size)
        shift = UInt64(64 - size.trailingZeroBitCount)
        additions = 0
        sampleSize = 10 * size
    }

    /// The word and the bit offsets of the key's four counters (one per 16-bit quarter).
    @inlinable
    func place(_ hash: Int) -> (word: Int, offsets: (UInt64, UInt64, UInt64, UInt64)) {
        // Top bits of the mix: the shard was chosen by the top bits of a *different* product, and the hash table
        // uses the low bits of this one.
        let mixed = HashMix.mix(hash)
        let word = Int(truncatingIfNeeded: mixed >> shift)
        let pick = mixed &* 0x9E37_79B9_7F4A_7C15  // more bits for the counters
        return (
            word,
            ((pick & 3) << 2, 16 + ((pick >> 8) & 3) << 2, 32 + ((pick >> 16) & 3) << 2, 48 + ((pick >> 24) & 3) << 2)
        )
    }

    /// The estimated number of recent uses of the key with this hash (0...15).
    @inlinable
    func frequency(_ hash: Int) -> UInt64 {
        let (i, o) = place(hash)
        let w = words[i]
        return min(min((w >> o.0) & 15, (w >> o.1) & 15), min((w >> o.2) & 15, (w >> o.3) & 15))
    }

    /// Counts one use of the key with this hash.
    @inlinable
    mutating func increment(_ hash: Int) {
        let (i, o) = place(hash)
        var w = words[i]
        let before = w
        if (w >> o.0) & 15 != 15 { w &+= 1 << o.0 }
        if (w >> o.1) & 15 != 15 { w &+= 1 << o.1 }
        if (w >> o.2) & 15 != 15 { w &+= 1 << o.2 }
        if (w >> o.3) & 15 != 15 { w &+= 1 << o.3 }
        guard w != before else { return }
        words[i] = w
        additions &+= 1
        if additions >= sampleSize { age() }
    }

    @usableFromInline
    mutating func age() {
        for i in words.indices { words[i] = (words[i] >> 1) & 0x7777_7777_7777_7777 }
        additions /= 2
    }
}
