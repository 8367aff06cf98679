import Foundation
import ImageStore

/// `compact [--purge-expired] [--purge-quarantine] [--dry-run]`.
enum CompactCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "compact",
        summary: "Reclaim the space LMDB never gives back: write a compacted copy and swap it in atomically.",
        arguments: "",
        options: [
            OptionSpec(name: "--purge-expired", help: "delete expired entries first"),
            OptionSpec(name: "--purge-quarantine", help: "delete what verify --repair set aside first"),
            OptionSpec(name: "--dry-run", help: "estimate the gain, change nothing"),
        ],
        positional: 0...0,
        details: """
            Refused (status 74) while another process has the store open for writing or reading.
            With --dry-run it is a read command: it only estimates, and works while a service writes.
            """)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let options = ImageStore.CompactionOptions(
            purgeExpired: arguments.has("--purge-expired"), purgeQuarantine: arguments.has("--purge-quarantine"),
            dryRun: arguments.has("--dry-run"))
        let report: CompactionReport
        if options.dryRun {
            let store = try context.openStore(.read)
            report = try CommandFailure.mapping { () throws(ImageStoreError) in try store.compact(options) }
        } else {
            try context.requireStore()
            if isatty(2) == 1 { Output.standardError("compacting \(Describe.escaped(context.storePath))…") }
            report = try CommandFailure.mapping { () throws(ImageStoreError) in
                try ImageStore.compact(path: context.storePath, options: options)
            }
        }
        if isatty(2) == 1 && !options.dryRun { Output.standardError("\r\u{1B}[K") }
        let verb = report.dryRun ? "would shrink" : "shrank"
        context.print("\(verb) data.mdb from \(report.bytesBefore) to \(report.bytesAfter) bytes"
            + " (\(report.expiredPurged) expired, \(report.quarantinePurged) quarantined entries purged)"
            + String(format: " in %.3f s", report.duration.seconds))
    }
}
