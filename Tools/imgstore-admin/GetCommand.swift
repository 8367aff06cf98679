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
        let output = arguments.value("--output")
        let store = try context.openStore(.read)
        // The bytes are written straight from the store's memory map (or the log's buffer),
        // in chunks, while the read lasts: a 64 MiB image is never copied whole.
        let served = try CommandFailure.mapping { () throws(ImageStoreError) in
            try store.withImage(for: url) { (_, bytes) -> CommandFailure? in
                guard let output else {
                    Output.standardOutput(bytes)
                    return nil
                }
                return write(bytes, to: output)
            }
        }
        guard let served else { throw CommandFailure(code: .notFound, message: "no entry for \(url)") }
        if let failure = served { throw failure }
    }

    /// Writes `bytes` into whatever `path` names, opened as `>` in a shell opens it, in chunks;
    /// returns the failure instead of throwing it (it runs inside the store's read).
    static func write(_ bytes: UnsafeRawBufferPointer, to path: String) -> CommandFailure? {
        func failure(_ code: Int32) -> CommandFailure {
            CommandFailure(code: .ioError, message: "cannot write \(path): \(String(cString: strerror(code)))")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return failure(errno) }
        let written = Output.writeAll(fd, bytes)
        // A regular file's bytes are only known to be there once close succeeds (NFS reports late).
        let closed = close(fd) == 0 ? nil : errno
        return (written ?? closed).map(failure)
    }
}
