import Foundation
import ImageStore

/// `get URL [-o FILE]`: writes an entry's bytes to stdout or a file.
enum GetCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "get", summary: "Write the image stored for URL to standard output, or to FILE with -o.",
        arguments: "URL",
        options: [OptionSpec(name: "--output", short: "-o", value: "FILE", help: "write to FILE instead of standard output")],
        positional: 1...1,
        details: """
            -o writes through to what FILE is: a regular file is created or truncated, a device such as
            /dev/null or a FIFO stays what it is, and a symbolic link is followed (the link stays).
            """)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let url = arguments.positionals[0]
        let store = try context.openStore(.read)
        guard let image = try CommandFailure.mapping({ () throws(ImageStoreError) in try store.get(url) }) else {
            throw CommandFailure(code: .notFound, message: "no entry for \(url)")
        }
        if let output = arguments.value("--output") {
            try write(image.data, to: output)
        } else {
            Output.standardOutput(image.data)
        }
    }

    /// Writes `data` into whatever `path` names, opened as `>` in a shell opens it, in chunks.
    static func write(_ data: Data, to path: String) throws(CommandFailure) {
        func failure(_ code: Int32) -> CommandFailure {
            CommandFailure(code: .ioError, message: "cannot write \(path): \(String(cString: strerror(code)))")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure(errno) }
        let written = data.withUnsafeBytes { Output.writeAll(fd, $0) }
        // A regular file's bytes are only known to be there once close succeeds (NFS reports late).
        let closed = close(fd) == 0 ? nil : errno
        if let code = written ?? closed { throw failure(code) }
    }
}
