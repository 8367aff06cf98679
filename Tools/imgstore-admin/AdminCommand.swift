import Foundation
import ImageStore
import Synchronization

/// One subcommand: its table entry and what it does.
protocol AdminCommand {
    static var spec: CommandSpec { get }
    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure)
}

/// What every command gets: where the store is, and how to write output.
struct CommandContext {
    var storePath: String
    /// `--max-disk-bytes`, for the commands that take it: the disk budget a writer opens with.
    var maxDiskBytes: Int? = nil
    /// Every store `openStore` opened; `run` in main.swift closes them after the command, on
    /// the main thread (a store dropped without `close()` is not checkpointed).
    let opened = OpenedStores()

    /// How a command uses the store.
    enum Access {
        /// Read only: never creates or changes anything, works beside a writer and on
        /// read-only media; sees what has been applied to LMDB.
        case read
        /// As its writer, on a store that exists.
        case write
        /// As its writer, creating the store when it is missing (`put`, `import`, `demo`, `fetch`).
        case create
    }

    /// Opens the store for `access`. A missing store is status 66 for `read` and `write`
    /// (`missingStatus` lets verify use fsck's 8), other failures 74 (or 65 for bad data), or
    /// what `failure` makes of them (verify's own statuses).
    func openStore(_ access: Access, configuration: ImageStore.Configuration = .init(),
                   missingStatus: ExitCode = .noInput,
                   failure: (ImageStoreError) -> CommandFailure = CommandFailure.init(storeError:)) throws(CommandFailure) -> ImageStore {
        if access != .create { try requireStore(missingStatus: missingStatus) }
        var configuration = configuration
        configuration.readOnly = access == .read
        if access == .read { configuration.sweepPeriod = nil }
        // A writer enforces the budget as it opens, so a store over it (a full disk) gets out.
        if access != .read, let maxDiskBytes { configuration.maxDiskBytes = maxDiskBytes }
        let store: ImageStore
        do { store = try ImageStore(path: storePath, configuration: configuration) } catch {
            throw failure(error)
        }
        // What recovery noticed (a log cut short or damaged where LMDB holds the records) is
        // never silent, whichever command opened the store.
        for warning in store.recoveryReport.warnings {
            Output.standardError("imgstore-admin: warning: write-ahead log: \(warning)\n")
        }
        opened.add(store)
        return store
    }

    /// Fails with "no store at PATH" unless the store's data file is there. A path that is
    /// not a directory is left to the store, which says so.
    func requireStore(missingStatus: ExitCode = .noInput) throws(CommandFailure) {
        var isDirectory: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: storePath, isDirectory: &isDirectory)
        if !exists || (isDirectory.boolValue && !FileManager.default.fileExists(atPath: storePath + "/data.mdb")) {
            throw CommandFailure(code: missingStatus, message: "no store at \(storePath)")
        }
    }

    func print(_ line: String) { Output.standardOutput(line + "\n") }
}

extension CommandFailure {
    /// The exit status and message an `ImageStoreError` ends the tool with: 65 for bad input,
    /// 74 otherwise. Messages that name library API (`Configuration.…`, `readOnly`,
    /// `salvageDamagedLog`) are said in the tool's terms.
    init(storeError error: ImageStoreError) {
        switch error {
        case let .urlTooLong(length, limit):
            self.init(code: .dataError, message: "The URL is \(length) bytes long, over the limit of \(limit) bytes.")
        case let .entryTooLarge(byteCount, limit):
            self.init(code: .dataError, message: "The image is \(byteCount) bytes, over the limit of \(limit) bytes per entry.")
        case let .entryOverDiskBudget(byteCount, needed, limit, maxDiskBytes): self.init(overDiskBudget: byteCount, needed: needed, limit: limit, maxDiskBytes: maxDiskBytes)
        case .emptyURL, .malformedURL, .emptyData, .invalidImage, .invalidArgument:
            self.init(code: .dataError, message: error.description)
        case let .writerLocked(path, holder):
            self.init(code: .ioError, message: "the store at \(path) is open for writing by another process (\(holder)); stop it first, or use a read command (ls, get, stats, verify without --repair)")
        case let .walCorrupt(path, detail):
            self.init(code: .ioError, message: "The write-ahead log of the store at \(path) is damaged: \(detail). Acknowledged writes after the damage would be lost; run imgstore-admin verify --repair to skip the damage (it reports what it skipped), or restore the store.")
        case let .notWritable(path, reason):
            // The reason is the system's ("Not a directory", "Read-only file system"): the
            // library's "Check its permissions" would send the user the wrong way for most.
            self.init(code: .ioError, message: "The store directory \(path) cannot be used: \(reason).")
        case let .storeFull(path, limit):
            self.init(code: .ioError, message: "The store at \(path) is full: it reached its maximum map size of \(limit) bytes. Remove entries (rm, expire) and run imgstore-admin compact.")
        default:
            self.init(code: .ioError, message: error.description)
        }
    }

    /// Runs `body`, turning a thrown `ImageStoreError` into a failure.
    static func mapping<R>(_ body: () throws(ImageStoreError) -> R) throws(CommandFailure) -> R {
        do { return try body() } catch { throw CommandFailure(storeError: error) }
    }
}

/// Formatting shared by the listing commands.
enum Describe {
    static func image(_ facts: ImageFacts?) -> String {
        guard let facts else { return "unvalidated" }
        return "\(facts.format.rawValue) \(facts.width)x\(facts.height)"
    }

    /// `text` with control characters escaped (`\n`, `\t`, `\r`, else `\u{XX}`), so a URL or
    /// message from the outside stays on one line and cannot drive the terminal.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            case _ where isControl(scalar): out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}

/// The stores a command opened, closed explicitly once it is done.
final class OpenedStores: Sendable {
    private let stores = Mutex<[ImageStore]>([])

    func add(_ store: ImageStore) { stores.withLock { $0.append(store) } }

    /// Closes every store (writes, applies and checkpoints its log); idempotent.
    func closeAll() {
        for store in stores.withLock({ let all = $0; $0 = []; return all }) { store.close() }
    }
}
