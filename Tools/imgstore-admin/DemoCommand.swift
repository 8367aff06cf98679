import Foundation
import ImageStore

/// `demo`: the README's first command. Imports the sample images, reads each back byte for
/// byte, and prints the store's statistics.
enum DemoCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "demo",
        summary: "Import the sample images into the store, read every one back byte for byte, print stats.",
        arguments: "",
        options: [OptionSpec(name: "--fixtures", value: "DIR", help: "the images to import (default: Tests/Fixtures)")],
        positional: 0...0)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let directory = arguments.value("--fixtures") ?? "Tests/Fixtures"
        let names = try DirectoryNames.list(directory)
            .filter { [".png", ".jpg", ".jpeg", ".gif", ".webp"].contains(where: $0.lowercased().hasSuffix) }.sorted()
        guard !names.isEmpty else {
            throw CommandFailure(code: .ioError, message: "no images found in \(directory); run from the repository root or pass --fixtures DIR")
        }
        let store = try context.openStore(.create)
        context.print("store: \(Describe.escaped(store.path))")
        for name in names {
            let data = try PutCommand.readFile(directory + "/" + name, limit: store.configuration.maxEntryBytes)
            let url = "https://demo.imgstore.invalid/fixtures/" + name
            let info = try CommandFailure.mapping { () throws(ImageStoreError) in try store.put(data, for: url) }
            guard let back = try CommandFailure.mapping({ () throws(ImageStoreError) in try store.image(for: url) }), back.data == data else {
                throw CommandFailure(code: .ioError, message: "read-back of \(url) did not return the bytes put")
            }
            context.print("  put+get ok  \(String(info.byteCount).leftPadded(6)) bytes  \(Describe.image(info.facts).padding(toLength: 14, withPad: " ", startingAt: 0))  \(Describe.escaped(url))")
        }
        context.print("\(names.count) images stored and read back byte for byte.")
        context.print(StatsCommand.describe(try StatsCommand.facts(of: store)))
    }
}
