import Foundation
import ImageStore

/// `ls [--json]`: lists entries' metadata.
enum ListCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "ls", summary: "List every entry: size, image format and dimensions, URL.",
        arguments: "", options: [OptionSpec(name: "--json", help: "print a JSON array of entry objects")],
        positional: 0...0)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let store = try context.openStore(.read)
        let entries = try CommandFailure.mapping { () throws(ImageStoreError) in try store.entries() }
            .sorted { $0.url < $1.url }
        if arguments.has("--json") {
            context.print(JSONOutput.line(entries.map(EntryJSON.init)))
            return
        }
        for entry in entries {
            context.print("\(String(entry.byteCount).leftPadded(10))  \(Describe.image(entry.facts).padding(toLength: 18, withPad: " ", startingAt: 0))  \(Describe.escaped(entry.url))")
        }
    }
}

extension String {
    func leftPadded(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}
