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
            OptionSpec(name: "--ttl", value: "SECONDS", help: "seconds until each entry expires, or 'never', for every file (default: a manifest's expiresAt, else the store's, 7 days)"),
            Options.durabilityOption,
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
            "file" is a path relative to DIR (not absolute, no ".." segment); "url" the URL to store it under.
            "checksum" and "bytes", when present, must match the file (XXH3-64 as 16 hex digits, and its
            size): a file that differs was damaged after the export, and is skipped with nothing stored.
            "expiresAt" restores the entry's expiry exactly (null: never expires; without the key, the
            --ttl default; more than 100 years away: bad data); an entry whose expiresAt has passed is not
            stored but left out with a note (with --json: "ok":false, "error":"… expired at …"), as export
            leaves expired entries out; it does not change the exit status. "createdAt" is kept
            as the entry's creation time; its last access is the import. --ttl overrides every entry's
            expiresAt (the lifetime counts from the import). A key export writes ("format", "width",
            "height", "lastAccessedAt" too) with a value of the wrong type (e.g. "bytes": "5") skips its
            entry as bad data. Other keys are not read. Only the listed files are imported.

            Output: with --json, one line per file, printed only after that file's put was acknowledged as
            durably as --durability asks (a script may trust every line it saw):
              {"bytes":3870,"format":"png","height":48,"ok":true,"path":"a b/c.png","url":"file:///…","width":64}
              {"error":"The data for … is not a valid image …","ok":false,"path":"bad.png","url":"file:///…"}
            Without --json, skipped files are named on stderr and the last line is
              imported N of M files (K skipped)
            with ", E expired left out" after K skipped when a manifest's entries had expired.

            Exit status: 0 every file imported (or left out as expired); 65 some files were skipped as bad data (not an image, too
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
        /// The XXH3-64 the manifest records, if any.
        var expectedChecksum: UInt64?
        /// The creation time the manifest records, kept by the restored entry.
        var createdAt: Date?
        /// The lifetime the manifest records (`.never` for null, `.at` its expiresAt); nil when it
        /// has none or `--ttl` overrides it.
        var expiry: Expiry?
        /// Known before reading: why this candidate is skipped, and whether as bad data or I/O.
        var problem: (message: String, code: ExitCode)?
    }

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let directory = arguments.positionals[0]
        let expiry = try Options.expiry(arguments)
        let ttlGiven = arguments.value("--ttl") != nil
        let durability = try Options.durability(arguments)
        let json = arguments.has("--json")
        if arguments.value("--manifest") != nil && arguments.value("--base-url") != nil {
            throw ArgumentParser.usage("--manifest and --base-url cannot be used together")
        }
        try checkDirectory(directory)
        let candidates: [Candidate]
        if let manifest = arguments.value("--manifest") {
            candidates = try manifestCandidates(manifest).map { found in
                var candidate = found
                if ttlGiven { candidate.expiry = nil }
                return candidate
            }
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
        var imported = 0, badData = 0, unreadable = 0, expired = 0
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
            if let mismatch = manifestMismatch(candidate, data, url: url) {
                report(candidate, mismatch, .dataError)
                continue
            }
            if case let .at(expiresAt)? = candidate.expiry, expiresAt.timeIntervalSinceNow > ImageStore.Configuration.maxLifetime.seconds {
                report(candidate, "the manifest's expiresAt \(JSONOutput.date(expiresAt)) is more than 100 years from now", .dataError)
                continue
            }
            if case let .at(expiresAt)? = candidate.expiry, expiresAt <= Date() {
                // Stored, it would be expired at once: left out as export leaves expired entries out.
                expired += 1
                let note = "\(url) expired at \(JSONOutput.date(expiresAt)) (the manifest's expiresAt); pass --ttl to import it anyway"
                if json {
                    context.print(JSONOutput.line(ImportLineJSON(path: candidate.path, url: url, ok: false, error: note)))
                } else {
                    progress.finish()
                    Output.standardError("imgstore-admin import: left out \(Describe.escaped(candidate.path)): \(Describe.escaped(note))\n")
                }
                continue
            }
            do {
                let entryExpiry = candidate.expiry ?? expiry
                let info: EntryInfo
                if let createdAt = candidate.createdAt {
                    info = try store.restore(data, for: url, createdAt: createdAt, expiry: entryExpiry, durability: durability)
                } else {
                    info = try store.put(data, for: url, expiry: entryExpiry, durability: durability)
                }
                // The put has returned: the entry is as durable as `durability` asks, so it may be reported.
                imported += 1
                if json {
                    context.print(JSONOutput.line(ImportLineJSON(path: candidate.path, url: info.url, ok: true, bytes: info.byteCount, facts: info.facts)))
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
        if !json {
            context.print("imported \(imported) of \(candidates.count) files (\(skipped) skipped"
                + (expired > 0 ? ", \(expired) expired left out)" : ")"))
        }
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
            do throws(DirectoryNames.DirectoryReadError) { names = try DirectoryNames.names(in: absolute) } catch {
                found.append(Candidate(path: relative.isEmpty ? "." : relative, problem: ("cannot read directory: \(error.reason)", .ioError)))
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
    /// the whole import with 65 before anything is stored; an entry with an unsafe file name or
    /// a field of the wrong type is reported and skipped as bad data.
    static func manifestCandidates(_ file: String) throws(CommandFailure) -> [Candidate] {
        let data = try PutCommand.readFile(file, limit: 1 << 30)
        let shape = #"expected {"entries": [{"file": ..., "url": ...}, ...]}"#
        let manifest: ManifestInputJSON
        do { manifest = try JSONDecoder().decode(ManifestInputJSON.self, from: data) } catch let missing as ManifestInputJSON.Entry.MissingName {
            throw CommandFailure(code: .dataError, message: "\(file): entry \(missing.index.map(String.init) ?? "?") has no \"file\" or \"url\" string; \(shape)")
        } catch {
            throw CommandFailure(code: .dataError, message: "\(file) is not an imgstore manifest: \(shape)")
        }
        return manifest.entries.map { entry in
            var candidate = Candidate(path: entry.file, url: entry.url, expectedBytes: entry.bytes,
                                      expectedChecksum: entry.checksum, createdAt: entry.createdAt,
                                      expiry: entry.expiresAt.map { $0.map(Expiry.at) ?? .never })
            let segments = entry.file.split(separator: "/", omittingEmptySubsequences: false)
            if entry.file.isEmpty || entry.file.hasPrefix("/") || segments.contains("..") || entry.file.utf8.contains(0) {
                candidate.problem = ("unsafe file name in the manifest: it must be a path inside DIR, without \"..\"", .dataError)
            } else if let problem = entry.problem {
                candidate.problem = (problem, .dataError)
            }
            return candidate
        }
    }

    /// Why `data`, read for `candidate`, is not what its manifest entry recorded (the byte count,
    /// then the XXH3-64), or nil when it is or nothing was recorded.
    static func manifestMismatch(_ candidate: Candidate, _ data: Data, url: String) -> String? {
        if let expected = candidate.expectedBytes, expected != data.count {
            return "the file has \(data.count) bytes, the manifest says \(expected)"
        }
        guard let expected = candidate.expectedChecksum else { return nil }
        let actual = ImageStore.checksum(of: data)
        guard actual != expected else { return nil }
        return "checksum mismatch for \(url): the file's XXH3-64 is \(JSONOutput.hex(actual)), the manifest says \(JSONOutput.hex(expected));"
            + " the file changed or was damaged after the export"
    }
}
