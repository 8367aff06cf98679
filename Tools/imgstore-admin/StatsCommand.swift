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
            SharedTierOptions.tierOption, SharedTierOptions.prefixOption, SharedTierOptions.timeoutOption,
        ],
        positional: 0...0,
        details: """
            Facts about the store only: this process's own counters (hits, misses) say nothing about a
            store a service uses, so they are left out. "disk bytes" is what the store directory takes
            on disk: data.mdb, lock.mdb, every log segment (spare ones included) and writer.lock.
            --prometheus prints the store's gauges of ImageStore.metrics (imgstore_entries,
            imgstore_logical_bytes, imgstore_file_bytes: data.mdb) and imgstore_disk_bytes (the
            "disk bytes" above) labelled store="PATH", for a cron job that writes them where node_exporter's
            textfile collector reads (write to a temporary file and rename it, so the collector never
            reads half a file). A service exports its counters itself, with
            StoreMetrics.prometheusExposition().

            With --shared-tier URL, also lists the tier under the prefix (every page: this takes a
            request per 1000 objects) and reports its objects and their bytes: a "shared tier:" line,
            "sharedTier": {"bytes", "objects", "prefix", "url"} in --json (null without it), and the gauges
            imgstore_shared_tier_objects and imgstore_shared_tier_object_bytes (labelled tier="URL",
            prefix="P") with --prometheus. A service exports the tier's counters (hits, misses, PUTs,
            412s, errors by kind, breaker state, queue depth) itself, with
            SharedTier.Statistics.prometheusExposition(). Exits 69 when the tier is unavailable, 77
            when it refuses the credentials.
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
        /// Null without --shared-tier.
        @Nullable var sharedTier: TierContents? = nil
    }

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        if arguments.has("--json") && arguments.has("--prometheus") {
            throw ArgumentParser.usage("--json and --prometheus cannot be used together")
        }
        let tier = try SharedTierOptions.tier(arguments)
        let store = try context.openStore(.read)
        var contents: TierContents?
        if let tier { contents = try AsyncBridge.wait { await Self.contents(of: tier) }.get() }
        if arguments.has("--prometheus") {
            var exposition = PrometheusExposition()
            exposition.append(store.metrics, labels: ["store": store.path], scope: .storeGauges)
            exposition.appendStoreDiskBytes(try diskBytes(of: store.path), labels: ["store": store.path])
            if let contents {
                exposition.appendSharedTierContents(objects: contents.objects, bytes: contents.bytes,
                                                    labels: ["tier": contents.url, "prefix": contents.prefix])
            }
            context.print(String(exposition.text.dropLast()))  // print adds the final newline
            return
        }
        var facts = try facts(of: store)
        facts.sharedTier = contents
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
        """ + (stats.sharedTier.map { "\nshared tier:   \($0.url) prefix \($0.prefix): \($0.objects) objects, \($0.bytes) bytes" } ?? "")
    }

    /// The blocks allocated to every file directly in `directory`.
    /// - Throws: `CommandFailure` (`.ioError`) when the directory cannot be listed: a total
    ///   that left files out would be wrong without saying so.
    static func diskBytes(of directory: String) throws(CommandFailure) -> Int {
        let names = try DirectoryNames.list(directory)
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
            diskBytes: try diskBytes(of: store.path), usedBytes: stats.usedBytes, occupiedBytes: stats.occupiedBytes,
            mapSize: stats.mapSize, maxMapSize: stats.maxMapSize, maxDiskBytes: stats.maxDiskBytes)
    }
}
