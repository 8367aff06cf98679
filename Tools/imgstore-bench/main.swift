import Foundation

// imgstore-bench [case-prefix...] [--quick]
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

// Every case, in the order they run. A new area (e.g. store put/get against LMDB, SQLite, file-per-entry) is one
// more `enum …Cases { static let all: [BenchmarkCase] }` file, listed here; each case returns imgstore's measurement
// first, then the alternatives', so the report can compute the ratios.
let allCases: [BenchmarkCase] = RunnerSelfTest.all + MemoryTierCases.all

var options = BenchmarkOptions()
var prefixes: [String] = []
for argument in CommandLine.arguments.dropFirst() {
    switch argument {
    case "--quick":
        options.quick = true
        options.repetitions = 1
    case "-h", "--help":
        print("usage: imgstore-bench [case-prefix...] [--quick]\ncases:")
        for c in allCases { print("  \(c.name)") }
        exit(0)
    case let flag where flag.hasPrefix("-"):
        FileHandle.standardError.write(Data("imgstore-bench: unknown option \(flag)\n".utf8))
        exit(2)
    default: prefixes.append(argument)
    }
}

let selected = allCases.filter { c in prefixes.isEmpty || prefixes.contains { c.name.hasPrefix($0) } }
if selected.isEmpty {
    FileHandle.standardError.write(Data("imgstore-bench: no case matches \(prefixes.joined(separator: " "))\n".utf8))
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

var rows: [[String]] = []
var notes: [String] = []
for benchmark in selected {
    FileHandle.standardError.write(Data("running \(benchmark.name)…\n".utf8))
    let measurements = benchmark.run(options)
    rows += Report.rows(measurements)
    notes += Report.scaling(measurements)
}
print(
    "imgstore-bench: \(cores) cores, load average \(startLoad.map { String($0) } ?? "?") at start, "
        + (options.quick ? "quick" : "best of \(options.repetitions) runs")
)
Report.printTable(rows)
if !notes.isEmpty { print("\nscaling:\n  " + notes.joined(separator: "\n  ")) }
warnIfDebugBuild()
