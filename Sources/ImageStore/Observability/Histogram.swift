import Synchronization

/// A histogram with fixed bucket bounds, updated with relaxed atomics. Values are integers
/// (records, nanoseconds); `scale` turns them into the exported unit (seconds).
final class Histogram: Sendable {
    /// Upper bounds (inclusive) of the finite buckets, ascending; at most 15.
    let bounds: [Int]
    let scale: Double
    private let counts: InlineArray<16, Atomic<Int>>
    private let sum = Atomic<Int>(0)

    init(bounds: [Int], scale: Double = 1) {
        // Invariant: the finite buckets and the +Inf one fit the inline storage, in order.
        precondition(bounds.count < 16 && bounds == bounds.sorted(), "at most 15 ascending bucket bounds")
        self.bounds = bounds
        self.scale = scale
        counts = InlineArray { _ in Atomic(0) }
    }

    func record(_ value: Int) {
        let bucket = bounds.firstIndex { value <= $0 } ?? bounds.count
        counts[bucket].wrappingAdd(1, ordering: .relaxed)
        sum.wrappingAdd(value, ordering: .relaxed)
    }

    var snapshot: HistogramSnapshot {
        var cumulative = 0
        var buckets: [HistogramSnapshot.Bucket] = []
        for (index, bound) in bounds.enumerated() {
            cumulative += counts[index].load(ordering: .relaxed)
            buckets.append(.init(upperBound: Double(bound) * scale, count: cumulative))
        }
        cumulative += counts[bounds.count].load(ordering: .relaxed)
        return HistogramSnapshot(buckets: buckets, count: cumulative, sum: Double(sum.load(ordering: .relaxed)) * scale)
    }
}

/// A histogram as `metrics` reports it: cumulative bucket counts, as Prometheus exposes them.
public struct HistogramSnapshot: Sendable, Hashable, Codable {
    /// One bucket: how many observations were at most `upperBound`.
    public struct Bucket: Sendable, Hashable, Codable {
        public var upperBound: Double
        public var count: Int
        public init(upperBound: Double, count: Int) {
            self.upperBound = upperBound
            self.count = count
        }
    }
    /// The finite buckets, ascending; the `+Inf` bucket is `count`.
    public var buckets: [Bucket]
    /// Observations in all.
    public var count: Int
    /// The sum of every observation, in the histogram's unit.
    public var sum: Double

    public init(buckets: [Bucket] = [], count: Int = 0, sum: Double = 0) {
        self.buckets = buckets
        self.count = count
        self.sum = sum
    }
}
