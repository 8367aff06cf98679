import Foundation
import ImageStore

/// `quarantine [--purge] [--json]`: what `verify --repair` set aside.
enum QuarantineCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "quarantine", summary: "List the entries verify --repair set aside, or delete them with --purge.",
        arguments: "",
        options: [
            OptionSpec(name: "--purge", help: "delete everything in the quarantine (takes the writer lock)"),
            OptionSpec(name: "--json", help: "print a JSON array"),
        ],
        positional: 0...0)

    /// One quarantined entry in `--json` output.
    struct QuarantinedJSON: Encodable {
        var quarantinedAt: Date
        var reason: String
        @Nullable var url: String?
        var bytes: Int
    }

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        if arguments.has("--purge") {
            let store = try context.openStore(.write)
            let count = try CommandFailure.mapping { () throws(ImageStoreError) in try store.purgeQuarantine() }
            context.print("purged \(count) quarantined entr\(count == 1 ? "y" : "ies")")
            return
        }
        let store = try context.openStore(.read)
        let entries = try CommandFailure.mapping { () throws(ImageStoreError) in try store.quarantinedEntries() }
        if arguments.has("--json") {
            context.print(JSONOutput.line(entries.map {
                QuarantinedJSON(quarantinedAt: $0.quarantinedAt, reason: $0.reason.rawValue, url: $0.url, bytes: $0.bytes)
            }))
        } else {
            for entry in entries {
                context.print("\(JSONOutput.date(entry.quarantinedAt))  \(entry.reason.rawValue)  \(entry.bytes) bytes  \(entry.url.map(Describe.escaped) ?? "(no metadata)")")
            }
        }
    }
}
