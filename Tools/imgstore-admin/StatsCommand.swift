import Foundation
import ImageStore

/// `stats [--json]`: the store's counts and sizes.
enum StatsCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "stats", summary: "Print the store's entry count, logical and on-disk bytes, and map size.",
        arguments: "", options: [OptionSpec(name: "--json", help: "print one JSON object")], positional: 0...0)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let store = try context.openStoreForReading()
        let stats = try CommandFailure.mapping { () throws(ImageStoreError) in try store.statistics() }
        if arguments.has("--json") {
            let data = try! JSONEncoder.sorted.encode(stats)
            context.print(String(decoding: data, as: UTF8.self))
        } else {
            context.print(describe(stats, path: store.path))
        }
    }

    static func describe(_ stats: StoreStatistics, path: String) -> String {
        """
        store:         \(path)
        entries:       \(stats.entryCount)
        logical bytes: \(stats.logicalBytes)
        file bytes:    \(stats.fileBytes)
        used bytes:    \(stats.usedBytes)
        map size:      \(stats.mapSize) (max \(stats.maxMapSize))
        expired:       \(stats.expiredEntries) entries, \(stats.expiredBytes) bytes (not yet swept)
        fresh bytes:   \(stats.logicalBytes - stats.expiredBytes)
        occupied:      \(stats.occupiedBytes) bytes of pages\(stats.maxDiskBytes.map { " of a \($0)-byte budget" } ?? " (no disk budget)")
        """
    }
}

extension JSONEncoder {
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
