import Foundation
import ImageStore

/// `wal`: the write-ahead log's segments and sequence numbers.
enum LogStatusCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "wal", summary: "Open the store as its writer (recovering its log) and show the log's state.",
        arguments: "", options: [OptionSpec(name: "--json", help: "print one JSON object")], positional: 0...0,
        details: "Fails with status 74 while another process writes to the store.")

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let store = try context.openStore()
        let report = store.recoveryReport
        guard let status = store.logStatus else { return }
        let object: [String: Any] = [
            "openSegment": status.openSegment, "openSegmentBytes": status.openSegmentBytes,
            "closedSegments": status.closedSegments, "nextSequence": status.nextSequence,
            "syncedSequence": status.syncedSequence, "unappliedBytes": status.unappliedBytes,
            "recovery": ["segmentsRead": report.segmentsRead, "recordsReplayed": report.recordsReplayed,
                         "recordsAlreadyApplied": report.recordsAlreadyApplied,
                         "tornBytesDropped": report.tornBytesDropped, "salvaged": report.salvaged],
        ]
        if arguments.has("--json") {
            context.print(Describe.json(object))
            return
        }
        context.print("""
            recovery:        \(report.segmentsRead) segment(s) read, \(report.recordsReplayed) record(s) replayed, \
            \(report.recordsAlreadyApplied) already applied, \(report.tornBytesDropped) torn byte(s) dropped
            open segment:    \(status.openSegment) (\(status.openSegmentBytes) bytes written)
            closed segments: \(status.closedSegments.isEmpty ? "none" : status.closedSegments.map(String.init).joined(separator: ", "))
            next sequence:   \(status.nextSequence)
            pending bytes:   \(status.unappliedBytes)
            """)
    }
}

/// `checkpoint`: apply the log to LMDB, sync it, retire the segments.
enum CheckpointCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "checkpoint",
        summary: "Recover and apply the write-ahead log, sync LMDB, and retire the log's segments.",
        arguments: "", positional: 0...0, details: "Fails with status 74 while another process writes to the store.")

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let store = try context.openStore()
        let report = store.recoveryReport
        try CommandFailure.mapping { () throws(ImageStoreError) in try store.checkpoint() }
        store.close()
        context.print("checkpointed: \(report.recordsReplayed) record(s) replayed from the log, \(report.tornBytesDropped) torn byte(s) dropped")
    }
}
