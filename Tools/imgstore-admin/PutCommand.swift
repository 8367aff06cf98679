import Foundation
import ImageStore

/// `put URL FILE`: stores a file's bytes as the image for a URL.
enum PutCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "put", summary: "Validate FILE and store it as the image for URL (replacing any entry).",
        arguments: "URL FILE",
        options: [strictOption],
        positional: 2...2)

    /// `--strict` on `put` and `import`: the store's strict trailing-data policy for this run.
    static let strictOption = OptionSpec(
        name: "--strict", help: "reject images with bytes after their end marker (IEND, EOI, GIF trailer); default: store them")

    /// The store configuration `put` and `import` open with: the defaults, plus `--strict`.
    static func configuration(_ arguments: ParsedArguments) -> ImageStore.Configuration {
        var configuration = ImageStore.Configuration()
        configuration.rejectTrailingBytes = arguments.has("--strict")
        return configuration
    }

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let (url, file) = (arguments.positionals[0], arguments.positionals[1])
        let data = try readFile(file)
        let store = try context.openStore(configuration: configuration(arguments))
        let info = try CommandFailure.mapping { () throws(ImageStoreError) in try store.put(data, for: url) }
        context.print("stored \(info.url) (\(info.byteCount) bytes, \(Describe.image(info.image)))")
    }

    /// The bytes of `path`, or a failure with status 74 naming the file and the reason.
    static func readFile(_ path: String) throws(CommandFailure) -> Data {
        do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            let reason = !exists ? "no such file" : isDirectory.boolValue ? "it is a directory" : "permission denied"
            throw CommandFailure(code: .ioError, message: "cannot read \(path): \(reason)")
        }
    }
}
