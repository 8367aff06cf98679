import Foundation
import ImageStore

/// `import DIR`: stores every image file under DIR, each under a URL derived from its path
/// (or listed in a manifest), reporting each file only once its put is acknowledged.
enum ImportCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "import",
        summary: "Store every image file under DIR (recursively), under URLs derived from the paths or a manifest.",
        arguments: "DIR",
        options: [
            OptionSpec(name: "--base-url", value: "URL", help: "the prefix of every file's URL (default: file:// + DIR's absolute path + /)"),
            OptionSpec(name: "--manifest", value: "FILE", help: "import exactly the files a manifest lists (as export writes), under its URLs"),
            Options.ttlOption, Options.durabilityOption,
            OptionSpec(name: "--json", help: "print one JSON line per file, after its put was acknowledged"),
            PutCommand.strictOption, Options.maxDiskBytesOption,
        ],
        positional: 1...1,
        details: """
            Files: every regular file under DIR whose name ends in .png, .jpg, .jpeg, .gif or .webp (any case),
            in path order. Other files are ignored; hidden files and directories (name starts with ".") are
            skipped. Symbolic links are followed, but no directory is entered twice, so link loops end.
            The store validates each file: one that is not a valid image is reported and skipped.

            URL rule: BASE + the file's path relative to DIR, every path segment percent-encoded (each UTF-8
            byte except A-Z a-z 0-9 - . _ ~ becomes %XX). With --base-url https://cdn.test/img the file
            "a b/c.png" is stored as https://cdn.test/img/a%20b/c.png (a "/" is added to BASE when missing).
            BASE defaults to file:// + DIR's absolute path, percent-encoded the same way, + "/".

            Manifest (--manifest FILE, JSON; export writes one as DIR/manifest.json):
              {"entries": [{"file": "c-0123456789abcdef.png", "url": "https://cdn.test/img/c.png", "bytes": 3870}, ...]}
            "file" is a path relative to DIR (not absolute, no ".." segment); "url" the URL to store it under;
            "bytes", when present, must equal the file's size. Other keys (export's "checksum", "format",
            "expiresAt") are ignored. Only the listed files are imported.

            Output: with --json, one line per file, printed only after that file's put was acknowledged as
            durably as --durability asks (a script may trust every line it saw):
              {"bytes":3870,"format":"png","height":48,"ok":true,"path":"a b/c.png","url":"file:///…","width":64}
              {"error":"The data for … is not a valid image …","ok":false,"path":"bad.png","url":"file:///…"}
            Without --json, skipped files are named on stderr and the last line is
              imported N of M files (K skipped)

            Exit status: 0 every file imported; 65 some files were skipped as bad data (not an image, too
            large, a bad URL, a manifest mismatch) and all others imported; 74 a file or directory could not
            be read (all others imported), DIR or the manifest cannot be read, or the store failed: import
            then stops at once, and the files already reported stay imported; 64 usage error.
            """)

    /// The file name extensions imported from a directory, lowercased.
    static let imageExtensions: Set<String> = ["png", "jpg", "jpeg", "gif", "webp"]

    /// One file to import: where it is, and the URL it goes under (or why it cannot be).
    struct Candidate {
        /// The path relative to DIR, as reported in `"path"`.
        var path: String
        var url: String?
        /// The size the manifest promises, if any.
        var expectedBytes: Int?
        /// Known before reading: why this candidate is skipped, and whether as bad data or I/O.
        var problem: (message: String, code: ExitCode)?
    }

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let directory = arguments.positionals[0]
        let expiry = try Options.expiry(arguments)
        let durability = try Options.durability(arguments)
        let json = arguments.has("--json")
        if arguments.value("--manifest") != nil && arguments.value("--base-url") != nil {
            throw ArgumentParser.usage("--manifest and --base-url cannot be used together")
        }
        try checkDirectory(directory)
        let candidates: [Candidate]
        if let manifest = arguments.value("--manifest") {
            candidates = try manifestCandidates(manifest)
        } else {
            let base = arguments.value("--base-url").map { $0.hasSuffix("/") ? $0 : $0 + "/" } ?? defaultBaseURL(directory)
            candidates = imageFiles(in: directory).map { found in
                var candidate = found
                if candidate.problem == nil { candidate.url = base + encodedPath(found.path) }
                return candidate
            }
        }

        let store = try context.openStore(.create, configuration: PutCommand.configuration(arguments))
        var progress = Progress(label: "import", total: candidates.count)
        var imported = 0, badData = 0, unreadable = 0
        func report(_ candidate: Candidate, _ message: String, _ code: ExitCode) {
            if code == .dataError { badData += 1 } else { unreadable += 1 }
            if json {
                context.print(JSONOutput.line(ImportLineJSON(path: candidate.path, url: candidate.url, ok: false, error: message)))
            } else {
                progress.finish()
                Output.standardError("imgstore-admin import: skipped \(Describe.escaped(candidate.path)): \(Describe.escaped(message))\n")
            }
        }
        for (index, candidate) in candidates.enumerated() {
            progress.update(index, candidate.path)
            if let problem = candidate.problem { report(candidate, problem.message, problem.code); continue }
            guard let url = candidate.url else { preconditionFailure("a candidate without a problem has a URL") }
            let data: Data
            do { data = try PutCommand.readFile(directory + "/" + candidate.path, limit: store.configuration.maxEntryBytes) } catch {
                report(candidate, error.message, error.code == .dataError ? .dataError : .ioError)
                continue
            }
            if let expected = candidate.expectedBytes, expected != data.count {
                report(candidate, "the file has \(data.count) bytes, the manifest says \(expected)", .dataError)
                continue
            }
            do {
                let info = try store.put(data, for: url, expiry: expiry, durability: durability)
                // The put has returned: the entry is as durable as `durability` asks, so it may be reported.
                imported += 1
                if json {
                    context.print(JSONOutput.line(ImportLineJSON(path: candidate.path, url: info.url, ok: true, bytes: info.byteCount, facts: info.image)))
                }
            } catch {
                let failure = CommandFailure(storeError: error)
                if failure.code == .dataError {
                    report(candidate, failure.message, .dataError)
                    continue
                }
                // The store itself failed (disk full, store full, log failed): nothing more can be stored.
                if json { context.print(JSONOutput.line(ImportLineJSON(path: candidate.path, url: url, ok: false, error: failure.message))) }
                progress.finish()
                store.close()
                throw CommandFailure(
                    code: .ioError,
                    message: "stopped after importing \(imported) of \(candidates.count) files: \(failure.message)")
            }
        }
        progress.finish()
        // Applied and checkpointed before the exit status says so, so even `--durability none`
        // puts are on disk at exit, and a store that cannot apply them (a damaged tree) is exit 74.
        do throws(ImageStoreError) { try store.checkpoint() } catch {
            store.close()
            throw CommandFailure(
                code: .ioError,
                message: "logged \(imported) of \(candidates.count) files, but applying them to the store failed: \(CommandFailure(storeError: error).message)")
        }
        store.close()
        let skipped = badData + unreadable
        if !json { context.print("imported \(imported) of \(candidates.count) files (\(skipped) skipped)") }
        if unreadable > 0 {
            throw CommandFailure(code: .ioError, message: "\(unreadable) file(s) or directories could not be read")
        }
        if badData > 0 {
            throw CommandFailure(code: .dataError, message: "\(badData) file(s) skipped as bad data")
        }
    }

    // MARK: - Finding files

    /// Fails with status 74 unless `path` is a readable directory.
    static func checkDirectory(_ path: String) throws(CommandFailure) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw CommandFailure(code: .ioError, message: "cannot read \(path): no such directory")
        }
        guard isDirectory.boolValue else { throw CommandFailure(code: .ioError, message: "cannot read \(path): not a directory") }
    }

    static func isImageName(_ name: String) -> Bool {
        guard let dot = name.lastIndex(of: ".") else { return false }
        return imageExtensions.contains(name[name.index(after: dot)...].lowercased())
    }

    /// The image files under `root`, as paths relative to it, depth first with each
    /// directory's names sorted. Directories are recognised by device and inode, so a symbolic
    /// link back up the tree is entered only once. Unreadable directories become candidates
    /// with an I/O problem, so they are reported rather than silently missed.
    static func imageFiles(in root: String) -> [Candidate] {
        var visited = Set<[UInt64]>()
        var found: [Candidate] = []
        func walk(_ relative: String) {
            let absolute = relative.isEmpty ? root : root + "/" + relative
            var info = stat()
            guard stat(absolute, &info) == 0, visited.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted else { return }
            let names: [String]
            do { names = try FileManager.default.contentsOfDirectory(atPath: absolute) } catch {
                found.append(Candidate(path: relative.isEmpty ? "." : relative, problem: ("cannot read directory", .ioError)))
                return
            }
            for name in names.sorted() where !name.hasPrefix(".") {
                let child = relative.isEmpty ? name : relative + "/" + name
                var childInfo = stat()
                guard stat(root + "/" + child, &childInfo) == 0 else {
                    // A dangling link or a file that vanished: report it if it looks like an image.
                    if isImageName(name) { found.append(Candidate(path: child, problem: ("cannot read \(child): \(String(cString: strerror(errno)))", .ioError))) }
                    continue
                }
                switch childInfo.st_mode & S_IFMT {
                case S_IFDIR: walk(child)
                case S_IFREG where isImageName(name): found.append(Candidate(path: child))
                default: continue
                }
            }
        }
        walk("")
        return found
    }

    // MARK: - The URL rule

    /// `file://` + the absolute path of `directory`, percent-encoded per segment, + `/`.
    static func defaultBaseURL(_ directory: String) -> String {
        var absolute = URL(fileURLWithPath: directory).standardizedFileURL.path
        while absolute.hasSuffix("/") { absolute.removeLast() }
        return "file://" + encodedPath(absolute) + "/"
    }

    /// `path` with every `/`-separated segment percent-encoded: all UTF-8 bytes but RFC 3986
    /// unreserved characters (§2.3: ALPHA DIGIT - . _ ~) become `%XX`, so spaces, `?`, `#`, `%`
    /// and non-ASCII names give valid, unambiguous URLs.
    static func encodedPath(_ path: String) -> String {
        path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            var encoded = ""
            for byte in segment.utf8 {
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                     UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                    encoded.unicodeScalars.append(Unicode.Scalar(byte))
                default:
                    encoded += String(format: "%%%02X", byte)
                }
            }
            return encoded
        }.joined(separator: "/")
    }

    // MARK: - Manifests

    /// The entries of a manifest. A manifest that is not JSON of the documented shape fails
    /// the whole import with 65 before anything is stored; an entry with an unsafe file name is
    /// reported and skipped as bad data.
    static func manifestCandidates(_ file: String) throws(CommandFailure) -> [Candidate] {
        let data = try PutCommand.readFile(file, limit: 1 << 30)
        let shape = #"expected {"entries": [{"file": ..., "url": ...}, ...]}"#
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let entries = object["entries"] as? [[String: Any]]
        else { throw CommandFailure(code: .dataError, message: "\(file) is not an imgstore manifest: \(shape)") }
        var candidates: [Candidate] = []
        for (index, entry) in entries.enumerated() {
            guard let path = entry["file"] as? String, let url = entry["url"] as? String else {
                throw CommandFailure(code: .dataError, message: "\(file): entry \(index) has no \"file\" or \"url\" string; \(shape)")
            }
            var candidate = Candidate(path: path, url: url, expectedBytes: entry["bytes"] as? Int)
            let segments = path.split(separator: "/", omittingEmptySubsequences: false)
            if path.isEmpty || path.hasPrefix("/") || segments.contains("..") || path.utf8.contains(0) {
                candidate.problem = ("unsafe file name in the manifest: it must be a path inside DIR, without \"..\"", .dataError)
            }
            candidates.append(candidate)
        }
        return candidates
    }
}
