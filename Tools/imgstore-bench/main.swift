import Foundation

// imgstore-bench [--quick] [--json] [--cases A,B] [--dataset-mib N] [--dir PATH] [--systems A,B] [--put-threads N,M] [case-prefix...]
//
// Runs every benchmark case whose name starts with one of the prefixes (all cases when none is given) and prints one
// row per (case, system). Build in release: `swift build -c release --product imgstore-bench`.

/// Printed to stderr before and after the run in debug builds, so it is seen whatever scrolls by.
func warnIfDebugBuild() {
    #if DEBUG
    fflush(nil)  // flush stdout first: after the table, not somewhere above it
    FileHandle.standardError.write(
        Data(
            """
            ************************************************************************
            *  WARNING: imgstore-bench was built in DEBUG mode. Numbers are       *
            *  meaningless. Run: swift build -c release --product imgstore-bench  *
            ************************************************************************

            """.utf8))
    #endif
}

warnIfDebugBuild()

// Every case, in the order they run. A new area is one more `enum …Cases { static let all: [BenchmarkCase] }` file,
// listed here; each case returns imgstore's measurement first, then the alternatives', so the report can compute the
// ratios.
let allCases: [BenchmarkCase] =
    RunnerSelfTest.all + MemoryTierCases.all + StoreCases.all + ValidationCases.all + MaintenanceCases.all
    + CompactAndLoadCases.all + LongReaderCases.all + AsyncPutCases.all + BusyReadCases.all + FleetCases.all
    + StructureCheckCases.all

let usage = """
    usage: imgstore-bench [--quick] [--json] [--cases A,B] [--dataset-mib N] [--dir PATH] [--systems A,B] [--put-threads N,M]
                          [case-prefix...]
      --quick          every case on a tiny data set, in seconds (a smoke test; asserts nothing about time)
      --json           one JSON object per line per (case, system, threads) on stdout instead of the table
      --cases A,B      run the cases named A and B, or whose names start with "A." or "B."
      --dataset-mib N  MiB of images each put measurement writes and the get cases read (default 256; quick 8)
      --dir PATH       where stores are created (default $TMPDIR/imgstore-bench-PID); removed afterwards
      --systems A,B    in the put cases, measure only the systems named A and B (for A/B runs of one row)
      --put-threads N,M  in put.sync, put.sync.small and put.batched, only N and M writer threads (for A/B runs)
    """

var options = BenchmarkOptions()
var prefixes: [String] = []
var json = false
var datasetMiB: Int?
var arguments = CommandLine.arguments.dropFirst()[...]
@MainActor func value(after flag: String) -> String {
    guard let value = arguments.popFirst() else {
        FileHandle.standardError.write(Data("imgstore-bench: \(flag) needs a value\n\(usage)\n".utf8))
        exit(2)
    }
    return value
}
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick":
        options.quick = true
        options.repetitions = 1
    case "--json": json = true
    case "--cases": prefixes += value(after: argument).split(separator: ",").map(String.init)
    case "--dataset-mib":
        guard let n = Int(value(after: argument)), n > 0 else {
            FileHandle.standardError.write(Data("imgstore-bench: --dataset-mib needs a positive integer\n".utf8))
            exit(2)
        }
        datasetMiB = n
    case "--dir": options.directory = value(after: argument)
    case "--systems": options.putSystems = Set(value(after: argument).split(separator: ",").map(String.init))
    case "--put-threads":
        let counts = value(after: argument).split(separator: ",").map { Int($0) }
        guard !counts.isEmpty, counts.allSatisfy({ ($0 ?? 0) > 0 }) else {
            FileHandle.standardError.write(Data("imgstore-bench: --put-threads needs positive integers, like 1,16\n".utf8))
            exit(2)
        }
        options.putThreadCounts = counts.compactMap { $0 }
    case "-h", "--help":
        print(usage + "\ncases:")
        for c in allCases { print("  \(c.name)") }
        exit(0)
    case let flag where flag.hasPrefix("-"):
        FileHandle.standardError.write(Data("imgstore-bench: unknown option \(flag)\n\(usage)\n".utf8))
        exit(2)
    default: prefixes.append(argument)
    }
}
options.datasetBytes = (datasetMiB ?? (options.quick ? 8 : 256)) << 20

/// A case is selected by its exact name, or by a prefix that ends where a name component does (`put` selects
/// `put.sync` and `put.batched`; `put.sync` also selects `put.sync.small`).
@MainActor func isSelected(_ name: String) -> Bool {
    prefixes.isEmpty || prefixes.contains { name == $0 || name.hasPrefix($0.hasSuffix(".") ? $0 : $0 + ".") }
}
let selected = allCases.filter { isSelected($0.name) }
if selected.isEmpty {
    FileHandle.standardError.write(Data("imgstore-bench: no case matches \(prefixes.joined(separator: ","))\n".utf8))
    exit(2)
}

let cores = ProcessInfo.processInfo.activeProcessorCount
let startLoad = BenchmarkRunner.loadAverage()
if let load = startLoad, load > 0.5 {
    let warning =
        "imgstore-bench: WARNING: load average \(load) on \(cores) cores: other work will distort the numbers, "
        + "most of all the 2-thread ones (see the cores column)\n"
    FileHandle.standardError.write(Data(warning.utf8))
}
try? FileManager.default.removeItem(atPath: options.directory)
try? FileManager.default.createDirectory(atPath: options.directory, withIntermediateDirectories: true)

let runStart = BenchmarkRunner.nanoseconds()
var rows: [[String]] = []
var notes: [String] = []
/// MiB of freed memory the host took back while each case ran (`PageReporting`), for cases where it was any.
var reportedPerCase: [String] = []
let reportedAtStart = PageReporting.reportedKiB()
for benchmark in selected {
    FileHandle.standardError.write(Data("running \(benchmark.name)…\n".utf8))
    let caseStart = BenchmarkRunner.nanoseconds()
    let reportedBefore = PageReporting.reportedKiB()
    let measurements = benchmark.run(options)
    let caseSeconds = Double(BenchmarkRunner.nanoseconds() - caseStart) / 1e9
    var caseLine = String(format: "  %.1f s", caseSeconds)
    if let before = reportedBefore, let after = PageReporting.reportedKiB() {
        let mebibytes = (after - before) >> 10
        caseLine += ", the host took back \(mebibytes) MiB of freed memory"
        if mebibytes > 0 { reportedPerCase.append("\(benchmark.name) \(mebibytes)") }
    }
    FileHandle.standardError.write(Data((caseLine + "\n").utf8))
    if json {
        for line in Report.jsonLines(measurements) { print(line) }
        fflush(nil)
    }
    rows += Report.rows(measurements)
    notes += Report.scaling(measurements)
}
try? FileManager.default.removeItem(atPath: options.directory)
let runSeconds = Double(BenchmarkRunner.nanoseconds() - runStart) / 1e9

var summary = [
    "peak RSS: \(Report.peakRSS() >> 20) MiB (includes the workload images held in memory, about "
        + "\(Workloads.heldBytes >> 20) MiB, and the read fixtures' NSCache)",
    "memory tier limit: \(MemoryTierLimit.description); NSCache gets the same cost limit",
    String(format: "run time: %.0f s", runSeconds),
]
if let settings = PageReporting.settings() {
    var line = "free page reporting (see PageReporting.swift): \(settings)"
    if let start = reportedAtStart, let end = PageReporting.reportedKiB() {
        line += "; the host took back \((end - start) >> 10) MiB of freed memory during the run"
        if !reportedPerCase.isEmpty { line += " (MiB per case: " + reportedPerCase.joined(separator: ", ") + ")" }
    }
    summary.append(line)
}
#if DEBUG
summary.insert("DEBUG BUILD: numbers are meaningless", at: 0)
#endif
if json {
    FileHandle.standardError.write(Data((summary.joined(separator: "\n") + "\n").utf8))
} else {
    print(
        "imgstore-bench: \(cores) cores, load average \(startLoad.map { String($0) } ?? "?") at start, "
            + (options.quick ? "quick" : "best of \(options.repetitions) runs (puts: the median of \(options.repetitions), put.async and recover: of \(options.widerRounds))")
            + ", data set \(options.datasetBytes >> 20) MiB"
    )
    Report.printTable(rows)
    if !notes.isEmpty { print("\nscaling:\n  " + notes.joined(separator: "\n  ")) }
    print("\n" + summary.joined(separator: "\n"))
}
warnIfDebugBuild()
