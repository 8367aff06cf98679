import Foundation
import ImageStore
#if canImport(Glibc)
import Glibc
#endif

/// What the power-loss writer (`Tests/imgstore-test-child/PowerLossWorkload.swift`) reported
/// before it was killed, and the check of a recovered store against it.
///
/// The writer is single-threaded and announces each op before doing it, so the ops of a store
/// form one sequence, and a correct recovery holds exactly the state after some prefix of it
/// (a put or remove that was in flight may or may not be there). The prefix must reach every
/// op the durability mode promised to keep.
struct PowerLossLedger {
    struct Op {
        var index: Int
        var isPut: Bool
        var url: String
        var acknowledged: UInt64?
        var checksum: UInt64?
    }

    /// Ops per store, in order.
    private(set) var ops: [String: [Op]] = [:]
    /// Stores in the order the writer first named them.
    private(set) var stores: [String] = []
    /// Per store: every op before this index is durable.
    private(set) var durable: [String: Int] = [:]
    /// The work (`create`, `checkpoint`, `compact`) begun last and whether it ended.
    private(set) var lastWork: (name: String, ended: Bool)?
    /// When the writer first reported a failed call.
    private(set) var firstError: (time: UInt64, message: String)?
    private var storeOfOp: [Int: String] = [:]

    init(parsing output: String) {
        // The last line may be cut short by the kill; only whole lines count.
        for line in output.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            let fields = line.split(separator: " ").map(String.init)
            switch (fields.first, fields.count) {
            case ("op", 6) where fields[2] == "put", ("op", 5) where fields[2] == "rm":
                guard let index = Int(fields[1]) else { continue }
                add(fields[3], Op(index: index, isPut: fields[2] == "put", url: fields[4]))
            case ("ack", 3), ("ack", 4):
                guard let index = Int(fields[1]), let store = storeOfOp[index],
                      let position = ops[store]?.lastIndex(where: { $0.index == index }) else { continue }
                ops[store]![position].acknowledged = UInt64(fields[2])
                ops[store]![position].checksum = fields.count == 4 ? UInt64(fields[3]) : nil
            case ("durable", 4):
                if let index = Int(fields[2]) { durable[fields[1]] = index }
            case ("begin", 3):
                lastWork = (fields[1], false)
                if fields[1] == "create", !stores.contains(fields[2]) { stores.append(fields[2]) }
            case ("end", 3):
                lastWork?.ended = true
            case ("error", _) where fields.count >= 2:
                if firstError == nil, let time = UInt64(fields[1]) {
                    firstError = (time, fields.dropFirst(2).joined(separator: " "))
                }
            default: continue
            }
        }
    }

    private mutating func add(_ store: String, _ op: Op) {
        if ops[store] == nil { ops[store] = [] }
        if !stores.contains(store) { stores.append(store) }
        ops[store]!.append(op)
        storeOfOp[op.index] = store
    }

    /// Whether any op was acknowledged in `times`.
    func acknowledgedAny(in times: Range<UInt64>) -> Bool {
        ops.values.contains { $0.contains { $0.acknowledged.map(times.contains) ?? false } }
    }

    /// What checking one recovered store found.
    struct Verdict {
        var problems: [String] = []
        /// Ops acknowledged before the cut that the recovered store does not hold.
        var lostAcknowledged = 0
    }

    /// Checks the recovered `entries` (URL → checksum) of `store` against its ops.
    /// `mustKeep` says whether an op acknowledged at a time must have survived.
    func check(_ store: String, entries: [String: UInt64], cutAt cut: UInt64,
               mustKeep: (_ acknowledged: UInt64) -> Bool) -> Verdict {
        var verdict = Verdict()
        let ops = self.ops[store] ?? []
        // The longest prefix whose state is exactly the recovered one (cheap: sizes first).
        var live: Set<String> = []
        var matching: Int? = entries.isEmpty ? 0 : nil
        let wanted = Set(entries.keys)
        for (position, op) in ops.enumerated() {
            if op.isPut { live.insert(op.url) } else { live.remove(op.url) }
            if live.count == wanted.count && live == wanted { matching = position + 1 }
        }
        guard let kept = matching else {
            let put = Set(ops.filter(\.isPut).map(\.url))
            let strangers = wanted.subtracting(put).sorted().prefix(3)
            let missing = ops.filter { $0.isPut && $0.acknowledged != nil && !wanted.contains($0.url) }.map(\.url).prefix(3)
            verdict.problems.append("\(store): the recovered entries are the state after no prefix of its \(ops.count) ops "
                + "(\(entries.count) entries; never put: \(Array(strangers)); acknowledged, absent: \(Array(missing)))")
            return verdict
        }
        let durableCount = ops.firstIndex { $0.index >= (durable[store] ?? 0) } ?? ops.count
        let promised = ops.lastIndex { op in op.acknowledged.map(mustKeep) ?? false }.map { $0 + 1 } ?? 0
        let required = max(durableCount, promised)
        if kept < required {
            let first = ops[kept]
            let when = first.acknowledged.map { Self.describe(Int64(bitPattern: cut &- $0)) } ?? "not acknowledged"
            verdict.problems.append("\(store): lost acknowledged writes: it holds the state after \(kept) of \(ops.count) ops, "
                + "but the first \(required) were promised (\(durableCount) by a checkpoint); first lost: op \(first.index) "
                + "\(first.isPut ? "put" : "rm") \(first.url), acknowledged \(when)")
        }
        verdict.lostAcknowledged = ops[kept...].filter { ($0.acknowledged ?? .max) < cut }.count
        for op in ops[..<kept] where op.isPut {
            if let expected = op.checksum, let actual = entries[op.url], actual != expected {
                verdict.problems.append("\(store): \(op.url) has checksum \(actual), acknowledged with \(expected)")
            }
        }
        return verdict
    }

    /// "N ms before the cut" (or after, for a negative `nanoseconds`).
    static func describe(_ nanoseconds: Int64) -> String {
        let milliseconds = Double(nanoseconds) / 1e6
        return milliseconds >= 0 ? "\(milliseconds) ms before the cut" : "\(-milliseconds) ms after the cut"
    }

    /// CLOCK_MONOTONIC in nanoseconds, the writer's clock.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
