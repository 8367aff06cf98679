import Foundation
import ImageStore
import Synchronization

/// `verify [--deep] [--repair] [--json]`: fsck for an image store.
enum VerifyCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "verify",
        summary: "Check every entry, its bytes, the indexes, the counters and the log, like fsck.",
        arguments: "",
        options: [
            OptionSpec(name: "--deep", help: "fully decode every PNG and JPEG (slower)"),
            OptionSpec(name: "--repair", help: "move bad entries to the quarantine, rebuild indexes and counters; on a damaged tree, copy every readable entry into a fresh data file (takes the writer lock; refused while another process has the store open)"),
            OptionSpec(name: "--json", help: "print one JSON object: ok, entriesChecked, problems, counts"),
        ],
        positional: 0...0,
        details: """
            Without --repair the store is opened read-only: it is safe while a service writes to it
            (it reads snapshots in short chunks and never takes the writer lock).

            With a custom key function (ImageStore.Configuration.keyFunction) only the cache key's
            hash is checked: this tool cannot run that function, so a damaged URL outside the cache
            key is found by the library's verify() only.

            exit status (as fsck):
              0   no problems
              1   problems found, and all of them repaired: the store is consistent again
                  (a damaged tree's salvage too, when it lost entries: it says how many)
              4   problems left
              8   operational error (cannot open the store, I/O error); also added to the
                  status when the report cannot be written to standard output: 8, 9 or 12,
                  with one line on stderr that says why and gives the report's summary
              16  usage error
            """,
        usageExitCode: .verifyUsage)

    /// The `--json` object.
    struct ReportJSON: Encodable {
        struct Problem: Encodable {
            var kind: String
            var subject: String
            var detail: String
            var repaired: Bool
        }
        var ok: Bool
        var entriesChecked: Int
        var logSegmentsChecked: Int
        var tornLogBytes: Int
        var problems: [Problem]
        /// Problems by kind.
        var counts: [String: Int]
    }

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let repair = arguments.has("--repair")
        var configuration = ImageStore.Configuration()
        configuration.salvageDamagedLog = repair
        configuration.validation = .none  // verify reads; nothing it writes needs validating
        let store = try context.openStore(repair ? .write : .read, configuration: configuration,
                                          missingStatus: .verifyOperationalError, failure: failure)
        // The total only scales the progress line (0: a count without one); a store whose
        // statistics cannot be read is what verify itself then reports.
        let progress = SharedProgress(Progress(label: "verifying entries", total: (try? store.statistics().entryCount) ?? 0))
        var options = ImageStore.VerifyOptions(deep: arguments.has("--deep"), repair: repair)
        options.progress = { progress.update($0) }
        let report: VerifyReport
        do { report = try store.verify(options) } catch {
            progress.finish()
            throw failure(error)
        }
        progress.finish()
        store.close()

        let summary = summary(of: report)
        if arguments.has("--json") {
            context.print(JSONOutput.line(ReportJSON(
                ok: report.problems.isEmpty, entriesChecked: report.entriesChecked,
                logSegmentsChecked: report.logSegmentsChecked, tornLogBytes: report.tornLogBytes,
                problems: report.problems.map { .init(kind: $0.kind.rawValue, subject: $0.subject, detail: $0.detail, repaired: $0.repaired) },
                counts: Dictionary(uniqueKeysWithValues: report.countsByKind.map { ($0.key.rawValue, $0.value) }))))
        } else {
            for problem in report.problems { context.print(Describe.escaped(problem.description)) }
            context.print(summary)
        }
        let found: ExitCode = report.problems.isEmpty ? .success
            : report.unrepaired.isEmpty ? .verifyRepaired : .verifyProblemsLeft
        // A lost report (full or closed stdout) must not pass for a clean check, nor hide what
        // was found or repaired: fsck's bits stay, 8 is added, and stderr says what was lost.
        if let reason = Output.writeError {
            throw CommandFailure(code: ExitCode(rawValue: found.rawValue | ExitCode.verifyOperationalError.rawValue),
                                 message: "cannot write the report to standard output: \(reason); its summary: \(summary)")
        }
        // The summary is on stdout, once: the status says the rest.
        if found != .success { throw CommandFailure(code: found, message: "") }
    }

    /// The report's last line: "OK: …", or the problems by kind and how many were repaired.
    static func summary(of report: VerifyReport) -> String {
        if report.problems.isEmpty {
            return "OK: \(report.entriesChecked) entries and \(report.logSegmentsChecked) log segment(s) checked"
        }
        let counts = report.countsByKind.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.value) \($0.key.rawValue)" }
        let repaired = report.problems.count - report.unrepaired.count
        return "\(report.problems.count) problem(s) found (\(counts.joined(separator: ", "))), \(repaired) repaired"
    }
}

extension VerifyCommand {
    /// A store too damaged to check (a truncated file, a broken tree) is a problem found and
    /// left (4), as fsck reports a file system it cannot check; anything else means the check
    /// could not run (8). The message is the one every command gives (in the tool's terms:
    /// "stop it first", not the library's "open it read-only").
    static func failure(_ error: ImageStoreError) -> CommandFailure {
        let message = CommandFailure(storeError: error).message
        if case .corruptStore = error { return CommandFailure(code: .verifyProblemsLeft, message: message) }
        return CommandFailure(code: .verifyOperationalError, message: message)
    }
}

/// A `Progress` line that the store's verifying thread may update.
private final class SharedProgress: Sendable {
    private let progress: Mutex<Progress>

    init(_ progress: Progress) { self.progress = Mutex(progress) }

    func update(_ done: Int) { progress.withLock { $0.update(done, "") } }
    func finish() { progress.withLock { $0.finish() } }
}
