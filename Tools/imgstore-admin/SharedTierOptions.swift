import Foundation
import SharedTier

/// `--shared-tier URL` and the options that go with it, shared by `warm`, `export
/// --to-shared-tier`, `stats` and `fetch`: the bucket URL (path style,
/// `http://127.0.0.1:8333/imgstore`), credentials and region from `AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN` and `AWS_REGION`, and how tier errors end the tool.
enum SharedTierOptions {
    static let urlHelp = "the tier's bucket URL, path style (http://127.0.0.1:8333/imgstore); credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, region from AWS_REGION"
    static let tierOption = OptionSpec(name: "--shared-tier", value: "URL", help: urlHelp)
    static let prefixOption = OptionSpec(name: "--prefix", value: "P", help: "the key prefix of the fleet's objects (default imgstore/)")
    static let timeoutOption = OptionSpec(name: "--tier-timeout", value: "SECONDS",
                                          help: "time allowed for each request to the tier, at most 3600 (default 10)")
    static let concurrencyOption = OptionSpec(name: "--concurrency", value: "N", help: "requests to the tier at once, 1 to 256 (default 8)")

    /// The default key prefix, the tier's own.
    static let defaultPrefix = "imgstore/"

    /// The tier `URL` names (the value of `option`), configured from the environment, or nil
    /// when `option` is absent. Nothing is sent yet. Without `breaker` (a batch of requests
    /// whose every failure is reported) the circuit breaker never opens; with it, the tier's
    /// default applies (what a loader wants: an outage becomes quick misses).
    /// - Throws: a usage failure (64) for a bad URL, a missing credential variable or a bad
    ///   `--prefix`/`--tier-timeout`; never one that shows a credential.
    static func tier(_ arguments: ParsedArguments, option: String = "--shared-tier",
                     breaker: Bool = false) throws(CommandFailure) -> SharedTier? {
        guard let url = arguments.value(option) else { return nil }
        let timeout = try Options.duration("--tier-timeout", arguments, limit: 3600) ?? .seconds(10)
        let prefix = arguments.value("--prefix") ?? defaultPrefix
        do {
            var s3 = try S3Configuration(bucketURL: url)
            // A batch job, not a service's hot path: generous bounds instead of 200 ms / 1 s.
            s3.connectTimeout = timeout
            s3.requestTimeout = timeout
            var configuration = SharedTier.Configuration(s3: s3, prefix: prefix)
            if !breaker { configuration.breakerThreshold = Int.max }
            return try SharedTier(configuration: configuration)
        } catch {
            throw failure(error, option: option)
        }
    }

    /// The tier's bucket URL as the tool prints it: endpoint and bucket, never credentials.
    static func describe(_ tier: SharedTier) -> String {
        let s3 = tier.client.configuration
        return "\(s3.endpoint.absoluteString)/\(s3.bucket)"
    }

    /// One line of what a tier did (`fetch --shared-tier` prints it on stderr).
    static func summary(_ s: SharedTier.Statistics) -> String {
        let kinds = s.errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        return "shared tier: \(s.hits) hits, \(s.absent) absent, \(s.skipped) skipped by the breaker, \(s.uploadsStored) stored, "
            + "\(s.preconditionFailed) lost races (412), \(s.errorCount) errors\(kinds.isEmpty ? "" : " (" + kinds.joined(separator: ", ") + ")")"
    }

    /// `--concurrency N` (default 8).
    static func concurrency(_ arguments: ParsedArguments) throws(CommandFailure) -> Int {
        try Options.count("--concurrency", arguments, in: 1...256) ?? 8
    }

    /// How a tier error ends the tool: 64 for what the command line or environment got wrong,
    /// 77 for credentials the tier refused, 69 for a tier that is unavailable or answers
    /// what S3 does not. Descriptions of `SharedTierError` never contain a secret.
    static func failure(_ error: SharedTierError, option: String = "--shared-tier") -> CommandFailure {
        switch error {
        case .invalidConfiguration, .missingCredentials:
            return CommandFailure(code: .usage, message: "\(option): \(error.description) (see imgstore-admin --help)")
        case .badCredentials:
            return CommandFailure(code: .noPermission, message: error.description)
        case .invalidEntry:
            return CommandFailure(code: .dataError, message: error.description)
        default:
            return CommandFailure(code: .unavailable, message: error.description)
        }
    }

    /// Whether `error` is one request's problem (the object is corrupt or went away), not the
    /// tier's: such an object is skipped and counted, the others go on.
    static func isObjectProblem(_ error: SharedTierError) -> Bool {
        switch error {
        case .corruptBody, .responseTooLarge: return true
        default: return false
        }
    }
}

/// The failures of a batch of tier requests: each named on stderr as it is noted, and the
/// worst kept for the exit status (74 store > 77 credentials > 69 unavailable > 65 bad data).
struct BatchFailures {
    let command: String
    private(set) var worst: CommandFailure?
    private static let rank: [ExitCode] = [.dataError, .unavailable, .noPermission, .ioError]

    init(command: String) { self.command = command }

    mutating func note(_ failure: CommandFailure) {
        Output.standardError("imgstore-admin \(command): \(Describe.escaped(failure.message))\n")
        let rank = Self.rank.firstIndex(of: failure.code) ?? Self.rank.count
        if worst.map({ rank > (Self.rank.firstIndex(of: $0.code) ?? Self.rank.count) }) ?? true { worst = failure }
    }

    /// Ends the command with the worst failure noted, if any: one with `summary` as its
    /// message when it is bad data (the objects were named already), else its own.
    func finish(summary: String) throws(CommandFailure) {
        guard let worst else { return }
        throw CommandFailure(code: worst.code, message: worst.code == .dataError ? summary : worst.message)
    }
}
