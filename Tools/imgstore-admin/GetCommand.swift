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
            A regular file that cannot take every byte (a full disk, a file size limit) is removed when
            get created it, else left empty: never half an image. A pipe whose reader has gone ends get
            quietly, as on standard output. FILE may not be one of the store's own files (also through a
            symbolic or hard link) nor lie inside the store directory: refused (exit 64) before anything
            is opened. So is a standard output that is one of the store's files (>> STORE/data.mdb).
            """)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let url = arguments.positionals[0]
        let output = arguments.value("--output")
        try context.requireStore()
        if let output {
            try refuseTargetInStore(output, store: context.storePath)
            try refuseClosedStandardDescriptor(output)
        } else {
            try refuseStandardOutputInStore(store: context.storePath)
        }
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
}
