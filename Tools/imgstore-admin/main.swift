import Foundation
import ImageStore

/// imgstore-admin: the ops tool for imgstore stores. One small type per subcommand; this
/// file dispatches and turns failures into one stderr line and an exit status.
let commands: [any AdminCommand.Type] = [
    DemoCommand.self, PutCommand.self, GetCommand.self, RemoveCommand.self, ListCommand.self, StatsCommand.self,
    ValidateCommand.self, ExpireCommand.self, LogStatusCommand.self, CheckpointCommand.self,
    FetchCommand.self, ImportCommand.self, ExportCommand.self, WarmCommand.self, VerifyCommand.self, QuarantineCommand.self, CompactCommand.self,
    ReadersCommand.self,
]

let version = "0.1.0"

/// One line per command: the names in a column wide enough for the longest, two spaces, the summary.
/// Computed, like `topLevelHelp`, only when help is asked for: main.swift's stored globals are set up
/// eagerly, before the command line is read, and every command would pay for building the help
/// (NSString padding, Foundation bridging) at start-up.
var commandTable: String {
    let width = commands.map { $0.spec.name.count }.max() ?? 0
    return commands.map { "  " + $0.spec.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + $0.spec.summary }
        .joined(separator: "\n")
}

var topLevelHelp: String {
    """
    usage: imgstore-admin [--store PATH] COMMAND [options] [arguments]

    The ops tool for imgstore image stores.

    commands:
    \(commandTable)

    global options:
      --store PATH   the store directory (default: $IMGSTORE_PATH, else ./imgstore)
      --help, -h     show help (also after a command: imgstore-admin put --help)
      --version      print the version

    exit status:
      0   success
      1   not found (get, rm), or an invalid image (validate)
      64  usage error
      65  bad input data (not an image, too large, malformed URL)
      66  no store at the --store path (read commands and rm, checkpoint, compact, expire create none)
      69  the shared tier is unavailable (unreachable, timed out, 5xx, no such bucket)
      74  I/O or storage error (cannot open, disk full, corrupt store, standard output not writable)
      77  the shared tier refused the credentials
    verify exits as fsck does: 0 no problems, 1 all repaired, 4 problems left,
      8 operational error, 16 usage error
    """
}

@MainActor
func run(_ argv: [String]) -> ExitCode {
    var arguments = argv
    // The command is the first argument that is not a global option (or the value of --store).
    // Any other option before it is a mistyped global option, not a command.
    var index = 0
    while index < arguments.count, arguments[index].hasPrefix("-") {
        let option = arguments[index]
        switch option {
        case "--store": index += 2
        case "--help", "-h", "--version": index += 1
        case _ where option.hasPrefix("--store="): index += 1
        default:
            Output.standardError("imgstore-admin: unknown option \(Describe.escaped(option)) (see imgstore-admin --help)\n")
            return .usage
        }
    }
    if arguments.contains("--version") && index >= arguments.count {
        Output.standardOutput("imgstore-admin \(version)\n")
        return Output.exitStatus(for: .success, prefix: "imgstore-admin")
    }
    guard index < arguments.count else {
        if arguments.contains("--help") || arguments.contains("-h") {
            Output.standardOutput(topLevelHelp + "\n")
            return Output.exitStatus(for: .success, prefix: "imgstore-admin")
        }
        Output.standardError("imgstore-admin: no command given (see imgstore-admin --help)\n")
        return .usage
    }
    let name = arguments.remove(at: index)
    guard let command = commands.first(where: { $0.spec.name == name }) else {
        Output.standardError("imgstore-admin: unknown command '\(Describe.escaped(name))' (see imgstore-admin --help)\n")
        return .usage
    }
    let prefix = "imgstore-admin \(name)"
    do {
        let parsed = try ArgumentParser.parse(arguments, for: command.spec)
        if parsed.has("--help") {
            Output.standardOutput(ArgumentParser.help(for: command.spec) + "\n")
            return Output.exitStatus(for: .success, prefix: prefix)
        }
        let storePath = parsed.value("--store") ?? ProcessInfo.processInfo.environment["IMGSTORE_PATH"] ?? "./imgstore"
        let context = CommandContext(storePath: storePath, maxDiskBytes: try Options.maxDiskBytes(parsed))
        defer { context.opened.closeAll() }
        try command.run(parsed, context: context)
        return Output.exitStatus(for: .success, prefix: prefix)
    } catch {
        if !error.message.isEmpty { Output.standardError("\(prefix): \(Describe.escaped(error.message))\n") }
        return Output.exitStatus(for: error.code, prefix: prefix)
    }
}

// Before anything opens a file: no file may become descriptor 0, 1 or 2.
Output.prepareStandardDescriptors()
exit(run(Array(CommandLine.arguments.dropFirst())).rawValue)
