import ImageStore

/// `rm URL`: removes an entry.
enum RemoveCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "rm", summary: "Remove the entry for URL. Exits 1 when there is none.", arguments: "URL",
        options: [Options.maxDiskBytesOption], positional: 1...1)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let url = arguments.positionals[0]
        let store = try context.openStore(.write)
        guard try CommandFailure.mapping({ () throws(ImageStoreError) in try store.remove(url) }) else {
            throw CommandFailure(code: .notFound, message: "no entry for \(url)")
        }
        context.print("removed \(Describe.escaped(url))")
    }
}
