import Foundation
import ImageStore

/// One subcommand: its table entry and what it does.
protocol AdminCommand {
    static var spec: CommandSpec { get }
    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure)
}

/// What every command gets: where the store is, and how to write output.
struct CommandContext {
    var storePath: String

    /// Opens the store, mapping failures to exit status 74 (or 65 for bad data).
    func openStore(configuration: ImageStore.Configuration = .init()) throws(CommandFailure) -> ImageStore {
        do { return try ImageStore(path: storePath, configuration: configuration) } catch {
            throw CommandFailure(storeError: error)
        }
    }

    /// Opens the store to read: as its writer when no other process is (so the log is
    /// recovered first), else read-only, seeing what the writer has applied.
    func openStoreForReading() throws(CommandFailure) -> ImageStore {
        do { return try ImageStore(path: storePath) } catch {
            switch error {
            case .writerLocked:
                var configuration = ImageStore.Configuration()
                configuration.readOnly = true
                return try openStore(configuration: configuration)
            default:
                throw CommandFailure(storeError: error)
            }
        }
    }

    func print(_ line: String) { Output.standardOutput(line + "\n") }
}

extension CommandFailure {
    /// The exit status an `ImageStoreError` ends the tool with: 65 for bad input, 74 otherwise.
    init(storeError error: ImageStoreError) {
        switch error {
        case .emptyURL, .malformedURL, .urlTooLong, .emptyData, .entryTooLarge, .invalidImage:
            self.init(code: .dataError, message: error.description)
        default:
            self.init(code: .ioError, message: error.description)
        }
    }

    /// Runs `body`, turning a thrown `ImageStoreError` into a failure.
    static func mapping<R>(_ body: () throws(ImageStoreError) -> R) throws(CommandFailure) -> R {
        do { return try body() } catch { throw CommandFailure(storeError: error) }
    }
}

/// Unbuffered writes to the standard streams.
enum Output {
    static func standardOutput(_ text: String) { FileHandle.standardOutput.write(Data(text.utf8)) }
    static func standardOutput(_ data: Data) { FileHandle.standardOutput.write(data) }
    static func standardError(_ text: String) { FileHandle.standardError.write(Data(text.utf8)) }
}

/// Formatting shared by the listing commands.
enum Describe {
    static func image(_ facts: ImageFacts?) -> String {
        guard let facts else { return "unvalidated" }
        return "\(facts.format.rawValue) \(facts.width)x\(facts.height)"
    }

    static func json(_ object: Any) -> String {
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        return String(decoding: data, as: UTF8.self)
    }

    static func entryObject(_ info: EntryInfo) -> [String: Any] {
        [
            "url": info.url, "bytes": info.byteCount, "checksum": String(format: "%016llx", info.checksum),
            "createdAt": ISO8601DateFormatter().string(from: info.createdAt),
            "expiresAt": info.expiresAt.map { ISO8601DateFormatter().string(from: $0) } ?? NSNull(),
            "format": info.image?.format.rawValue ?? NSNull(),
            "width": info.image?.width ?? NSNull(), "height": info.image?.height ?? NSNull(),
        ]
    }
}
