import Foundation
import ImageStore

/// `get URL [-o FILE]`: writes an entry's bytes to stdout or a file.
enum GetCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "get", summary: "Write the image stored for URL to standard output, or to FILE with -o.",
        arguments: "URL",
        options: [OptionSpec(name: "--output", short: "-o", value: "FILE", help: "write to FILE instead of standard output")],
        positional: 1...1)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let url = arguments.positionals[0]
        let store = try context.openStoreForReading()
        guard let image = try CommandFailure.mapping({ () throws(ImageStoreError) in try store.get(url) }) else {
            throw CommandFailure(code: .notFound, message: "no entry for \(url)")
        }
        if let output = arguments.value("--output") {
            do { try image.data.write(to: URL(fileURLWithPath: output), options: .atomic) } catch {
                throw CommandFailure(code: .ioError, message: "cannot write \(output): \((error as NSError).localizedDescription)")
            }
        } else {
            Output.standardOutput(image.data)
        }
    }
}
