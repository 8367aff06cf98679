import Foundation
import ImageStore

/// `export DIR`: writes every live entry's bytes as a file in DIR, plus a `manifest.json`
/// that `import --manifest` reads back.
enum ExportCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "export",
        summary: "Write every entry's image as a file in DIR, with a manifest.json that import --manifest reads back.",
        arguments: "DIR",
        options: [
            OptionSpec(name: "--force", help: "write into DIR even when it is not empty (files of the same name are replaced)"),
            OptionSpec(name: "--to-shared-tier", value: "URL", help: "push the entries to this shared tier instead: " + SharedTierOptions.urlHelp),
            SharedTierOptions.prefixOption, SharedTierOptions.concurrencyOption, SharedTierOptions.timeoutOption,
        ],
        positional: 0...1,
        details: """
            DIR is created when missing. An existing DIR that is not empty is refused (exit 74) unless --force.
            Entries that have expired are left out. Works while another process writes to the store: the
            entries are listed from one snapshot, and one removed meanwhile is left out.

            File names: a readable prefix (the URL's last path segment, percent-decoded, without its extension,
            every character but A-Z a-z 0-9 - _ . replaced by _, no leading . or -, at most 80 characters;
            "image" when nothing is left), "-", 16 hex digits of the URL's FNV-1a 64-bit hash, and an extension
            from the image format (png, jpg, gif, webp; bin when unknown). Names never contain "/" or start
            with ".", so nothing is written outside DIR; URLs that differ only in their query get different
            hashes; in the unlikely case of a clash the later URL (in URL order) gets -2, -3, ….

            Each file is written to a temporary name, synced and renamed; manifest.json is written last, the
            same way, so a manifest present means a complete export:
              {"entries": [{"bytes": 3870, "checksum": "<XXH3-64, 16 hex digits>", "createdAt": "<ISO 8601>",
                            "expiresAt": "<ISO 8601>" or null, "file": "c-0123456789abcdef.png", "format": "png",
                            "height": 48, "lastAccessedAt": "<ISO 8601>", "url": "https://…", "width": 64}, ...],
               "format": "imgstore-export", "version": 1}
            (each entry is an ls --json entry plus "file"; dates in UTC with milliseconds; one line)
            Restore with: imgstore-admin import --manifest DIR/manifest.json DIR

            Exit status: 0 every live entry exported; 74 DIR cannot be created or written, DIR is not empty
            (without --force), or an entry could not be read (corrupt bytes: named on stderr, the rest is
            exported and listed); 64 usage error.

            With --to-shared-tier URL instead of DIR: pushes every live entry to the tier, --concurrency at a time,
            in the layout the loader's uploads use (the absolute expiry, the origin's validators). An entry
            the tier holds already is skipped: a HEAD finds it, or the create (If-None-Match: *) loses to
            another host with 412. The last line is
              exported U of N entries to URL (S already there, L expired or removed, D too large, F failed)
            ("too large": the URL does not fit S3's 2 KB of metadata). Exit status: 0 every live entry is in
            the tier; 69 the tier is unavailable (unreachable, timed out, 5xx, no such bucket), for the
            listing or some uploads; 77 it refused the credentials; 65 some entries were too large; 74 an
            entry could not be read; 64 usage error.
            """)

    static let manifestName = "manifest.json"

    /// `manifest.json`: what `import --manifest` reads back.
    struct Manifest: Encodable {
        var format = "imgstore-export"
        var version = 1
        var entries: [ManifestEntry]
    }

    /// One exported entry: its file name beside the fields `ls --json` gives, in one object.
    struct ManifestEntry: Encodable {
        var file: String
        var entry: EntryJSON

        private enum Keys: String, CodingKey { case file }

        func encode(to encoder: any Encoder) throws {
            try entry.encode(to: encoder)
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(file, forKey: .file)
        }
    }

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        if let tier = try SharedTierOptions.tier(arguments, option: "--to-shared-tier") {
            guard arguments.positionals.isEmpty else { throw ArgumentParser.usage("export takes DIR or --to-shared-tier URL, not both") }
            return try exportToTier(tier, arguments, context: context)
        }
        // DIR is required unless --to-shared-tier is given: the parser's own message, as before.
        guard let directory = arguments.positionals.first else { throw ArgumentParser.usage("'export' expects DIR, got 0 argument(s)") }
        let store = try context.openStore(.read)
        try prepare(directory, force: arguments.has("--force"))
        let entries = try CommandFailure.mapping { () throws(ImageStoreError) in try store.entries() }.sorted { $0.url < $1.url }
        var namer = FileNamer()
        var manifest: [ManifestEntry] = []
        var leftOut = 0, unreadable = 0
        var progress = Progress(label: "export", total: entries.count)
        for (index, entry) in entries.enumerated() {
            progress.update(index, Describe.escaped(entry.url))
            let image: StoredImage?
            do { image = try store.image(for: entry.url) } catch {
                progress.finish()
                Output.standardError("imgstore-admin export: cannot read \(Describe.escaped(entry.url)): \(Describe.escaped(CommandFailure(storeError: error).message))\n")
                unreadable += 1
                continue
            }
            // Expired, or removed by another process since the listing.
            guard let image else { leftOut += 1; continue }
            let name = namer.name(for: image.info.url, format: image.info.facts?.format)
            try writeDurably(image.data, to: directory, name: name)
            manifest.append(ManifestEntry(file: name, entry: EntryJSON(image.info)))
        }
        progress.finish()
        let json = JSONOutput.line(Manifest(entries: manifest))
        try writeDurably(Data((json + "\n").utf8), to: directory, name: manifestName)
        try syncDirectory(directory)
        context.print("exported \(manifest.count) entries to \(Describe.escaped(directory))/\(manifestName)"
            + (leftOut > 0 ? " (\(leftOut) expired or removed left out)" : ""))
        if unreadable > 0 {
            throw CommandFailure(code: .ioError, message: "\(unreadable) entries could not be read; the manifest lists the rest")
        }
    }

    /// Creates `directory`, or checks that it is an empty directory (any directory with `force`).
    static func prepare(_ directory: String, force: Bool) throws(CommandFailure) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw CommandFailure(code: .ioError, message: "\(directory) exists and is not a directory")
            }
            let contents = try DirectoryNames.list(directory)
            guard contents.isEmpty || force else {
                throw CommandFailure(code: .ioError, message: "\(directory) is not empty; pass --force to write into it anyway")
            }
        } else {
            // mkdir -p, so the message is the system's reason, not Foundation's.
            var prefix = directory.hasPrefix("/") ? "" : "."
            for component in directory.split(separator: "/") {
                prefix += "/" + component
                guard mkdir(prefix, 0o755) == 0 || errno == EEXIST else {
                    throw CommandFailure(code: .ioError, message: "cannot create \(directory): \(String(cString: strerror(errno)))")
                }
            }
        }
    }

    /// Writes `data` to `directory/name` through a hidden temporary file that is synced and then
    /// renamed, so the name never holds partial bytes, even after a crash.
    static func writeDurably(_ data: Data, to directory: String, name: String) throws(CommandFailure) {
        let path = directory + "/" + name
        let temporary = directory + "/." + name + ".partial"
        func fail(_ step: String) -> CommandFailure {
            CommandFailure(code: .ioError, message: "cannot \(step) \(path): \(String(cString: strerror(errno)))")
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw fail("create") }
        let written = data.withUnsafeBytes { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 { if errno == EINTR { continue }; return false }
                offset += n
            }
            return true
        }
        do throws(CommandFailure) {
            guard written else { throw fail("write") }
            do { try FileSystem.sync(descriptor: fd, path: temporary) } catch {
                throw CommandFailure(code: .ioError, message: "cannot write \(path): \(error)")
            }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let failure = fail("rename a temporary file to")
            unlink(temporary)
            throw failure
        }
    }

    /// Makes the renames durable.
    static func syncDirectory(_ directory: String) throws(CommandFailure) {
        do { try FileSystem.sync(directory) } catch {
            throw CommandFailure(code: .ioError, message: "cannot make the export in \(directory) durable: \(error)")
        }
    }

    /// Derives safe, unique file names from URLs; see the command's details for the rule.
    struct FileNamer {
        /// Names handed out, lowercased, so names also stay distinct on case-insensitive file systems.
        private var used: Set<String> = []

        mutating func name(for url: String, format: ImageFormat?) -> String {
            let stem = Self.readablePrefix(url) + "-" + String(format: "%016llx", Self.fnv1a(url))
            let suffix = switch format {
            case .png: "png"
            case .jpeg: "jpg"
            case .gif: "gif"
            case .webp: "webp"
            case .unknown, nil: "bin"
            }
            var name = stem + "." + suffix
            var counter = 2
            while !used.insert(name.lowercased()).inserted {
                name = "\(stem)-\(counter).\(suffix)"
                counter += 1
            }
            return name
        }

        static func readablePrefix(_ url: String) -> String {
            var rest = Substring(url)
            if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
            // The path starts at the first "/" after the authority; query and fragment are not part of it.
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? ""
            if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
            let segment = rest.split(separator: "/").last.map(String.init) ?? ""
            var readable = segment.removingPercentEncoding ?? segment
            if let dot = readable.lastIndex(of: "."), dot > readable.startIndex { readable = String(readable[..<dot]) }
            var out = ""
            for scalar in readable.unicodeScalars {
                let keep = scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "-_.".unicodeScalars.contains(scalar))
                if keep { out.unicodeScalars.append(scalar) } else if !out.hasSuffix("_") { out += "_" }
            }
            while let first = out.first, first == "." || first == "-" { out.removeFirst() }
            out = String(out.prefix(80))
            return out.isEmpty ? "image" : out
        }

        /// FNV-1a, 64 bits: small, stable across runs and platforms (unlike `Hasher`).
        static func fnv1a(_ text: String) -> UInt64 {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
            return hash
        }
    }
}
