import Foundation

/// The results table: one row per (case, system); within a case the first row is imgstore's and every other row
/// shows imgstore's advantage over it (`imgstore ÷ alternative`, in throughput, or in hit ratio for hit-ratio cases).
enum Report {
    /// `cores`: CPU time the threads got over wall time. Well below `thr` means other processes took the cores and
    /// the row understates what the system can do on that many threads.
    static let header = ["case", "system", "thr", "cores", "ops/s", "MB/s", "p50", "p99", "hit%", "imgstore÷this"]

    /// Rows for one case's measurements; the base of each row is the first measurement with the same thread count.
    static func rows(_ measurements: [Measurement]) -> [[String]] {
        measurements.map { m in
            let base = measurements.first { $0.threads == m.threads }!
            let ratio: String
            if base.system == m.system {
                ratio = "(base)"
            } else if let a = base.hitRatio, let b = m.hitRatio {
                ratio = b > 0 ? String(format: "%.2f×", a / b) : "∞"
            } else {
                ratio = String(format: "%.2f×", base.opsPerSecond / m.opsPerSecond)
            }
            return [
                m.caseName, m.system, "\(m.threads)", String(format: "%.2f", m.cpuSeconds / m.seconds),
                formatCount(m.opsPerSecond),
                m.bytes == 0 ? "-" : String(format: "%.0f", m.megabytesPerSecond),
                formatNanoseconds(m.p50), formatNanoseconds(m.p99),
                m.hitRatio.map { String(format: "%.1f", $0 * 100) } ?? "-", ratio,
            ]
        }
    }

    /// One JSON object per measurement (`--json`): `case`, `system`, `threads`, `ops_per_s`, `mb_per_s`, `p50_us`,
    /// `p99_us`, plus `ops`, `bytes`, `seconds`, `cores` and `ratio` (imgstore ÷ this, as in the table).
    static func jsonLines(_ measurements: [Measurement]) -> [String] {
        measurements.map { m in
            let base = measurements.first { $0.threads == m.threads }!
            func number(_ x: Double) -> String { x.isFinite ? String(format: "%.6g", x) : "null" }
            var fields: [(String, String)] = [
                ("case", quoted(m.caseName)), ("system", quoted(m.system)), ("threads", "\(m.threads)"),
                ("ops_per_s", number(m.opsPerSecond)), ("mb_per_s", number(m.megabytesPerSecond)),
                ("p50_us", number(m.p50 / 1000)), ("p99_us", number(m.p99 / 1000)), ("ops", "\(m.operations)"),
                ("bytes", "\(m.bytes)"), ("seconds", number(m.seconds)), ("cores", number(m.cpuSeconds / m.seconds)),
                ("ratio", number(base.opsPerSecond / m.opsPerSecond)),
            ]
            if let hitRatio = m.hitRatio { fields.append(("hit_ratio", number(hitRatio))) }
            return "{" + fields.map { "\(quoted($0)): \($1)" }.joined(separator: ", ") + "}"
        }
    }

    static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Peak resident set size of this process so far, in bytes (`ru_maxrss` is in KiB on Linux).
    static func peakRSS() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_maxrss * 1024
    }

    /// One line per system measured on more than one thread count: its throughput at N threads over 1 thread.
    static func scaling(_ measurements: [Measurement]) -> [String] {
        var lines: [String] = []
        var systems: [String] = []
        for m in measurements where !systems.contains(m.system) { systems.append(m.system) }
        for system in systems {
            let runs = measurements.filter { $0.system == system }
            guard let one = runs.first(where: { $0.threads == 1 }) else { continue }
            for run in runs where run.threads > 1 {
                let factor = String(format: "%.2f", run.opsPerSecond / one.opsPerSecond)
                lines.append("\(run.caseName) \(system): \(run.threads) threads = \(factor)× 1 thread")
            }
        }
        return lines
    }

    /// Prints `header` and `rows` as an aligned plain-text table (first two columns left-aligned, the rest right).
    static func printTable(_ rows: [[String]]) {
        let all = [header] + rows
        let widths = header.indices.map { c in all.map { $0[c].count }.max() ?? 0 }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { c, cell in
                let pad = String(repeating: " ", count: widths[c] - cell.count)
                return c < 2 ? cell + pad : pad + cell
            }.joined(separator: "  ")
        }
        print(line(header))
        print(line(widths.map { String(repeating: "-", count: $0) }))
        for row in rows { print(line(row)) }
    }

    static func formatCount(_ x: Double) -> String {
        switch x {
        case 1e9...: String(format: "%.2fG", x / 1e9)
        case 1e6...: String(format: "%.2fM", x / 1e6)
        case 1e3...: String(format: "%.1fk", x / 1e3)
        default: String(format: "%.0f", x)
        }
    }

    static func formatNanoseconds(_ ns: Double) -> String {
        guard ns.isFinite else { return "-" }
        switch ns {
        case 1e9...: return String(format: "%.2fs", ns / 1e9)
        case 1e6...: return String(format: "%.2fms", ns / 1e6)
        case 1e3...: return String(format: "%.2fµs", ns / 1e3)
        default: return String(format: "%.0fns", ns)
        }
    }
}
