import Foundation
import ImageStore

/// `put [--ttl S|never] [--durability MODE] URL FILE`: stores a file's bytes as the image for a URL.
enum PutCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "put", summary: "Validate FILE and store it as the image for URL (replacing any entry).",
        arguments: "URL FILE", options: [Options.ttlOption, Options.durabilityOption, strictOption, Options.maxDiskBytesOption], positional: 2...2,
        details: """
            FILE may be - for standard input, or any readable file: a FIFO, /dev/stdin, a device. At most
            the entry size limit (64 MiB) plus one byte is read; a larger input is refused (status 65).
            """)

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
        let expiry = try Options.expiry(arguments)
        let durability = try Options.durability(arguments)
        let configuration = Self.configuration(arguments)
        let data = try readFile(file, limit: configuration.maxEntryBytes)
        // Before the store is opened: a refused put creates nothing (a mistyped --store stays absent).
        try checkInput(data, for: url, configuration: configuration)
        let store = try context.openStore(.create, configuration: configuration)
        let info = try CommandFailure.mapping { () throws(ImageStoreError) in
            let info = try store.put(data, for: url, expiry: expiry, durability: durability)
            // Applied to LMDB before exit 0: a put the store cannot apply (a damaged tree) is
            // exit 74, never a success that a read-only `get` could not see.
            try store.checkpoint()
            return info
        }
        context.print("stored \(Describe.escaped(info.url)) (\(info.byteCount) bytes, \(Describe.image(info.facts)))")
    }

    /// The checks `store.put` makes on its input, in its order, made without a store: the URL
    /// (the store's normalizer), then the bytes (not empty, a valid image for the store's
    /// validator in its structure mode and trailing-bytes policy). The store checks again
    /// when it takes them; this only moves a refusal before the store is created.
    /// - Throws: status 65 with the store's own message (`emptyURL`, `malformedURL`,
    ///   `urlTooLong`, `emptyData`, `invalidImage`).
    static func checkInput(_ data: Data, for url: String, configuration: ImageStore.Configuration) throws(CommandFailure) {
        let normalized = try CommandFailure.mapping { () throws(ImageStoreError) in
            try URLNormalizer(maxBytes: configuration.maxURLBytes).normalize(url)
        }
        guard !data.isEmpty else { throw CommandFailure(storeError: .emptyData) }
        let validator = ImageValidator(limits: configuration.rejectTrailingBytes ? .strict : .default)
        do { _ = try validator.validate(data, mode: .structure) } catch {
            throw CommandFailure(storeError: .invalidImage(url: URLNormalizer.excerpt(normalized), reason: error.description))
        }
    }

    /// The reason `readFile` gives for an input over `limit` bytes.
    static func tooLarge(_ limit: Int) -> String { "larger than the limit of \(limit) bytes per entry" }

    /// The bytes of `path` (`-`: standard input), read with `read(2)` so any readable file works,
    /// stopping after `limit` + 1 bytes.
    /// - Throws: status 74 naming the file and the system's reason when it cannot be read; 65
    ///   when it holds more than `limit` bytes.
    static func readFile(_ path: String, limit: Int) throws(CommandFailure) -> Data {
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw unreadable(path, errno) }
        defer { if fd != 0 { close(fd) } }
        var info = stat()
        if fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR { throw unreadable(path, EISDIR) }
        var data = Data()
        // A regular file's size is known: one allocation instead of regrowing (and copying) as chunks arrive.
        if info.st_mode & S_IFMT == S_IFREG && info.st_size > 0 { data.reserveCapacity(min(Int(info.st_size), limit) + 1) }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while data.count <= limit {
            let room = limit - data.count  // >= 0 here, so room + 1 cannot overflow unless room is Int.max
            let wanted = room < chunk.count ? room + 1 : chunk.count
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, wanted) }
            if n < 0 {
                if errno == EINTR { continue }
                throw unreadable(path, errno)
            }
            if n == 0 { return data }
            data.append(contentsOf: chunk[0..<n])
        }
        throw CommandFailure(code: .dataError, message: "\(path) is \(tooLarge(limit))")
    }

    private static func unreadable(_ path: String, _ code: Int32) -> CommandFailure {
        let reason = switch code {
        case ENOENT: "no such file"
        case EISDIR: "it is a directory"
        default: String(cString: strerror(code))
        }
        return CommandFailure(code: .ioError, message: "cannot read \(path): \(reason)")
    }
}
