import Foundation
import ImageStore
import SharedTier

/// How a failed load ends `fetch`, and how the shared tier's and the store's errors read in
/// `fetch` and `warm`: in one place, the exit status each kind calls for and a message in the
/// tool's terms, naming the flag that governs it (`--timeout`, `--max-disk-bytes`,
/// `--tier-timeout`), never a Swift type or property.
///
/// `fetch`'s statuses follow `ExitCode`'s meanings (and the README's table):
/// - **65** bad data: the URL is malformed or not http(s); the response is not an image, is
///   empty, or is over the store's entry size limit.
/// - **69** unavailable: the origin could not be reached, timed out, cut the body short, failed
///   (5xx) or refused the request with another status; the transfer failed.
/// - **1** not found: the origin answered 404 or 410. The image is not there, as `get` says of a
///   missing entry; retrying will not help, and it is not the data's fault.
/// - a store failure as every command reports it (74, or 65 for bad input).
enum LoaderFailureMessages {
    /// What limits an entry's size: the store's own limit, and `--max-disk-bytes` when given
    /// (a budget lowers the limit a put has to meet).
    struct EntryLimits {
        var storeLimit: Int
        var maxDiskBytes: Int?
    }

    /// The failure for the load of one URL: its status and its reason (the caller names the URL).
    static func failure(_ error: ImageLoaderError, limits: EntryLimits) -> CommandFailure {
        switch error {
        case let .invalidURL(_, reason):
            return CommandFailure(code: .dataError, message: "not an http or https URL: \(reason)")
        case let .unreachable(_, reason):
            return CommandFailure(code: .unavailable, message: "the origin could not be reached (\(reason)); check the network and the host")
        case let .timedOut(_, after):
            return CommandFailure(code: .unavailable,
                                  message: "the download took longer than --timeout \(seconds(after)); the origin is slow or unreachable")
        case let .httpStatus(_, status):
            return httpFailure(status)
        case let .responseTooLarge(_, limit, byteCount):
            let size = byteCount.map { "\($0) bytes" } ?? "larger than that"
            return CommandFailure(code: .dataError,
                                  message: "the response is \(size), over the store's entry size limit of \(limit) bytes; the download was aborted")
        case let .lengthMismatch(_, expected, received):
            return CommandFailure(code: .unavailable,
                                  message: "the response was cut short or padded: Content-Length said \(expected) bytes, \(received) arrived")
        case .emptyBody:
            return CommandFailure(code: .dataError, message: "the origin answered with an empty body, which is not an image")
        case let .invalidImage(_, reason):
            return CommandFailure(code: .dataError, message: "the response is not a valid image: \(reason)")
        case let .recentlyFailed(_, _, cause):
            // Within one run this is a URL given twice: the same failure, said the same way.
            return failure(cause, limits: limits)
        case let .store(storeError):
            return failure(storeError, limits: limits)
        case let .transport(_, reason):
            return CommandFailure(code: .unavailable, message: "the download failed: \(reason)")
        case .cancelled:
            return CommandFailure(code: .unavailable, message: "the download was cancelled")
        }
    }

    /// A store error as `fetch` and `warm` say it for one entry: a malformed URL or an entry over
    /// the size limit in the tool's words, anything else as every command says it.
    static func failure(_ error: ImageStoreError, limits: EntryLimits) -> CommandFailure {
        switch error {
        case let .malformedURL(_, reason):
            return CommandFailure(code: .dataError, message: "malformed URL: \(reason)")
        case .emptyURL:
            return CommandFailure(code: .dataError, message: "malformed URL: it is empty")
        case let .urlTooLong(length, limit):
            return CommandFailure(code: .dataError, message: "malformed URL: it is \(length) bytes long, over the limit of \(limit) bytes")
        case let .invalidImage(_, reason):
            return CommandFailure(code: .dataError, message: "not a valid image: \(reason)")
        case .emptyData:
            return CommandFailure(code: .dataError, message: "not a valid image: it is empty (0 bytes)")
        case let .entryTooLarge(byteCount, limit):
            if let budget = limits.maxDiskBytes, limit < limits.storeLimit {
                return CommandFailure(code: .dataError,
                                      message: "the image is \(byteCount) bytes, over the entry size limit of \(limit) bytes that --max-disk-bytes \(budget) allows")
            }
            return CommandFailure(code: .dataError, message: "the image is \(byteCount) bytes, over the store's entry size limit of \(limit) bytes")
        default:
            return CommandFailure(storeError: error)
        }
    }

    /// A non-2xx answer: 404 and 410 are "not found" (1); every other status is the origin
    /// failing or refusing (69): a retry later, or a fix on the origin's side, may help.
    static func httpFailure(_ status: Int) -> CommandFailure {
        switch status {
        case 404: return CommandFailure(code: .notFound, message: "the origin answered 404 (not found)")
        case 410: return CommandFailure(code: .notFound, message: "the origin answered 410 (gone)")
        case 500...599: return CommandFailure(code: .unavailable, message: "the origin failed with HTTP \(status)")
        default: return CommandFailure(code: .unavailable, message: "the origin refused it with HTTP \(status)")
        }
    }

    /// A shared-tier error as `warm` and `fetch` report it: the status `SharedTierOptions`
    /// gives it, the message naming `--tier-timeout` for a timeout and no library property.
    static func failure(_ error: SharedTierError) -> CommandFailure {
        var failure = SharedTierOptions.failure(error)
        switch error {
        case let .timedOut(operation, milliseconds):
            failure.message = "the shared tier did not answer \(operation) within --tier-timeout \(seconds(.milliseconds(milliseconds)))"
        case let .responseTooLarge(operation, limit):
            failure.message = "the shared tier's answer to \(operation) is larger than the \(limit) bytes the tool reads; it was not read"
        default:
            break
        }
        return failure
    }

    /// `duration` as the tool's flags take it: "1 s", "0.5 s".
    static func seconds(_ duration: Duration) -> String {
        let value = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return value == value.rounded() ? "\(Int(value)) s" : "\(value) s"
    }

    /// Worse first: the status of a batch is its most severe failure's. A store that fails (74)
    /// outranks credentials (77), an unavailable origin or tier (69), bad data (65), and a
    /// URL that is not found (1).
    static let severity: [ExitCode] = [.ioError, .noPermission, .unavailable, .dataError, .notFound]

    /// The most severe of `codes` (nil when there are none).
    static func mostSevere(_ codes: some Sequence<ExitCode>) -> ExitCode? {
        codes.min { (severity.firstIndex(of: $0) ?? -1) < (severity.firstIndex(of: $1) ?? -1) }
    }
}
