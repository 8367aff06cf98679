import Foundation

/// Seeded, reproducible inputs for the benchmark cases: a fast PRNG, the image size mix and a Zipf key generator.

/// SplitMix64: tiny, fast and good enough for workloads; the same seed always gives the same trace.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The sizes of stored images: 30% 4–16 KiB, 50% 16–128 KiB, 20% 128 KiB–1 MiB (uniform within each band).
enum ImageSizeMix {
    static func size(using rng: inout SeededGenerator) -> Int {
        let band = Int.random(in: 0..<100, using: &rng)
        switch band {
        case ..<30: return Int.random(in: (4 << 10)..<(16 << 10), using: &rng)
        case ..<80: return Int.random(in: (16 << 10)..<(128 << 10), using: &rng)
        default: return Int.random(in: (128 << 10)...(1 << 20), using: &rng)
        }
    }

    /// One size per key `0..<keys`, fixed by `seed`.
    static func sizes(keys: Int, seed: UInt64) -> [Int] {
        var rng = SeededGenerator(seed: seed)
        return (0..<keys).map { _ in size(using: &rng) }
    }
}

/// Keys `0..<n` drawn with probability ∝ 1 / (rank + 1)^s, by binary search over the cumulative distribution.
/// Key 0 is the most popular; shuffle the key→item mapping if popularity must not follow key order.
struct ZipfGenerator {
    private let cdf: [Double]

    init(keys n: Int, exponent s: Double) {
        var cdf = [Double](repeating: 0, count: n)
        var sum = 0.0
        for i in 0..<n {
            sum += 1 / pow(Double(i + 1), s)
            cdf[i] = sum
        }
        self.cdf = cdf.map { $0 / sum }
    }

    func next(using rng: inout SeededGenerator) -> Int {
        let u = Double.random(in: 0..<1, using: &rng)
        var lo = 0, hi = cdf.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if cdf[mid] < u { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// `count` keys, fixed by `seed`.
    func trace(count: Int, seed: UInt64) -> [Int] {
        var rng = SeededGenerator(seed: seed)
        return (0..<count).map { _ in next(using: &rng) }
    }
}

/// `count` keys drawn uniformly from `0..<keys`, fixed by `seed`.
func uniformTrace(keys: Int, count: Int, seed: UInt64) -> [Int] {
    var rng = SeededGenerator(seed: seed)
    return (0..<count).map { _ in Int.random(in: 0..<keys, using: &rng) }
}
