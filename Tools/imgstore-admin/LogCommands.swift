import Foundation
import ImageStore

/// `wal`: the write-ahead log's segment files.
enum LogStatusCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "wal", summary: "Show the write-ahead log's segment files (read-only; checkpoint applies them).",
        arguments: "", options: [OptionSpec(name: "--json", help: "print one JSON object")], positional: 0...0,
        details: """
            Read-only, like every read command: it works while a service writes to the store and never
            recovers, applies or rolls the log (checkpoint does). Lists the live segments (wal-N.log) in
            order with their sizes, the spare segments kept for reuse, and the bytes they all take on disk.
            """)

    /// The `--json` object.
    struct LogJSON: Encodable {
        struct Segment: Encodable {
            var number: UInt64
            /// The file's size (segments are preallocated, so this is not what was written).
            var bytes: Int
        }
        var segments: [Segment]
        var spareSegments: Int
        /// Blocks allocated to all segment files, spare ones included.
        var bytes: Int
    }

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        try context.requireStore()
        let names = try DirectoryNames.list(context.storePath)
        var log = LogJSON(segments: [], spareSegments: 0, bytes: 0)
        for name in names.sorted() where name.hasPrefix("wal-") && name.hasSuffix(".log") {
            var info = stat()
            guard stat(context.storePath + "/" + name, &info) == 0 else { continue }
            log.bytes += Int(info.st_blocks) * 512
            if name.hasPrefix("wal-spare-") {
                log.spareSegments += 1
            } else if let number = UInt64(name.dropFirst(4).dropLast(4)) {
                log.segments.append(.init(number: number, bytes: Int(info.st_size)))
            }
        }
        if arguments.has("--json") {
            context.print(JSONOutput.line(log))
            return
        }
        context.print("""
            segments:        \(log.segments.isEmpty ? "none" : log.segments.map { "\($0.number) (\($0.bytes) bytes)" }.joined(separator: ", "))
            spare segments:  \(log.spareSegments)
            disk bytes:      \(log.bytes)
            """)
    }
}

/// `checkpoint`: apply the log to LMDB, sync it, retire the segments.
enum CheckpointCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "checkpoint",
        summary: "Recover and apply the write-ahead log, sync LMDB, and retire the log's segments.",
        arguments: "", options: [Options.maxDiskBytesOption], positional: 0...0,
        details: "Fails with status 74 while another process writes to the store.")

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let store = try context.openStore(.write)
        let report = store.recoveryReport
        try CommandFailure.mapping { () throws(ImageStoreError) in try store.checkpoint() }
        store.close()
        context.print("checkpointed: \(report.recordsReplayed) record(s) replayed from the log, \(report.tornBytesDropped) torn byte(s) dropped")
    }
}
