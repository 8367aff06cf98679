import Foundation

/// SplitMix64: a small, fast, seedable generator for property tests. The seed comes from
/// `IMGSTORE_SEED` when set (to replay a failure), else from the system; tests print it.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public let seed: UInt64
    private var state: UInt64

    public init(seed: UInt64? = nil) {
        let chosen = seed
            ?? ProcessInfo.processInfo.environment["IMGSTORE_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        self.seed = chosen
        state = chosen
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> Data {
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            var index = 0
            while index < count {
                var word = next()
                let n = min(8, count - index)
                withUnsafeBytes(of: &word) { buffer.baseAddress!.advanced(by: index).copyMemory(from: $0.baseAddress!, byteCount: n) }
                index += n
            }
        }
        return data
    }
}
