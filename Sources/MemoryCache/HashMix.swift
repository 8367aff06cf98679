/// Scrambles a key's hash (`hashValue`, or the caller's) for the places a shard derives positions from it (its hash
/// table, its frequency sketch).
///
/// The shard was chosen from the top bits of `hash × golden ratio`, so every key in a shard shares those bits;
/// positions inside the shard must come from an independent mix, or they would use a fraction of the table.
@usableFromInline
enum HashMix {
    /// The SplitMix64 finaliser: every output bit depends on every input bit.
    @inlinable
    static func mix(_ hash: Int) -> UInt64 {
        var z = UInt64(truncatingIfNeeded: hash)
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
