import Foundation
import ImageStore

/// `stats [--json | --prometheus]`: the store's counts and sizes.
enum StatsCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "stats", summary: "Print the store's entry count, logical and on-disk bytes, and map size.",
        arguments: "",
        options: [
            OptionSpec(name: "--json", help: "print one JSON object"),
            OptionSpec(name: "--prometheus", help: "print the store's gauges in Prometheus' text format (node_exporter's textfile collector)"),
        ],
        positional: 0...0,
        details: """
            Facts about the store only: this process's own counters (hits, misses) say nothing about a
            store a service uses, so they are left out. "disk bytes" is what the store directory takes
            on disk: data.mdb, lock.mdb, every log segment (spare ones included) and writer.lock.
            --prometheus prints the store's gauges of ImageStore.metrics (entries, logical and file
            bytes) labelled store="PATH", for a cron job that writes them where node_exporter's
            textfile collector reads (write to a temporary file and rename it, so the collector never
            reads half a file). A service exports its counters itself, with
            StoreMetrics.prometheusExposition().
            """)

    /// The `--json` object: facts about the store, none about this process.
    struct StatsJSON: Encodable {
        var path: String
        var entryCount: Int
        var logicalBytes: Int
        var expiredEntries: Int
        var expiredBytes: Int
        /// Blocks allocated to data.mdb.
        var dataFileBytes: Int
        /// Blocks allocated to every file in the store directory.
        var diskBytes: Int
        var usedBytes: Int
        var occupiedBytes: Int
        var mapSize: Int
        var maxMapSize: Int
        @Nullable var maxDiskBytes: Int?
    }

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        if arguments.has("--json") && arguments.has("--prometheus") {
            throw ArgumentParser.usage("--json and --prometheus cannot be used together")
        }
        let store = try context.openStore(.read)
        if arguments.has("--prometheus") {
            let text = store.metrics.prometheusExposition(labels: ["store": store.path], scope: .storeGauges)
            context.print(String(text.dropLast()))  // print adds the final newline
            return
        }
        let facts = try facts(of: store)
        context.print(arguments.has("--json") ? JSONOutput.line(facts) : describe(facts))
    }

    static func describe(_ stats: StatsJSON) -> String {
        """
        store:         \(Describe.escaped(stats.path))
        entries:       \(stats.entryCount)
        logical bytes: \(stats.logicalBytes)
        expired:       \(stats.expiredEntries) entries, \(stats.expiredBytes) bytes (not yet swept)
        fresh bytes:   \(stats.logicalBytes - stats.expiredBytes)
        disk bytes:    \(stats.diskBytes) (all files of the store)
        data file:     \(stats.dataFileBytes) bytes on disk, \(stats.usedBytes) in use
        occupied:      \(stats.occupiedBytes) bytes of pages\(stats.maxDiskBytes.map { " of a \($0)-byte budget" } ?? " (no disk budget)")
        map size:      \(stats.mapSize) (max \(stats.maxMapSize))
        """
    }

    /// The blocks allocated to every file directly in `directory`.
    static func diskBytes(of directory: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.reduce(0) { total, name in
            var info = stat()
            return stat(directory + "/" + name, &info) == 0 ? total + Int(info.st_blocks) * 512 : total
        }
    }

    /// The store's facts, from one snapshot plus the directory's files.
    static func facts(of store: ImageStore) throws(CommandFailure) -> StatsJSON {
        let stats = try CommandFailure.mapping { () throws(ImageStoreError) in try store.statistics() }
        return StatsJSON(
            path: store.path, entryCount: stats.entryCount, logicalBytes: stats.logicalBytes,
            expiredEntries: stats.expiredEntries, expiredBytes: stats.expiredBytes, dataFileBytes: stats.fileBytes,
            diskBytes: diskBytes(of: store.path), usedBytes: stats.usedBytes, occupiedBytes: stats.occupiedBytes,
            mapSize: stats.mapSize, maxMapSize: stats.maxMapSize, maxDiskBytes: stats.maxDiskBytes)
    }
}
