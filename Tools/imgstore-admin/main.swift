import Foundation
import ImageStore

/// imgstore-admin: the ops tool for imgstore stores. One small type per subcommand; this
/// file dispatches and turns failures into one stderr line and an exit status.
let commands: [any AdminCommand.Type] = [
    DemoCommand.self, PutCommand.self, GetCommand.self, RemoveCommand.self, ListCommand.self, StatsCommand.self,
    ValidateCommand.self, ExpireCommand.self, LogStatusCommand.self, CheckpointCommand.self,
    FetchCommand.self, ImportCommand.self, ExportCommand.self, VerifyCommand.self, QuarantineCommand.self, CompactCommand.self,
    ReadersCommand.self,
]

let version = "0.1.0"

let topLevelHelp = """
    usage: imgstore-admin [--store PATH] COMMAND [options] [arguments]

    The ops tool for imgstore image stores.

    commands:
    \(commands.map { "  " + $0.spec.name.padding(toLength: 10, withPad: " ", startingAt: 0) + $0.spec.summary }.joined(separator: "\n"))

    global options:
      --store PATH   the store directory (default: $IMGSTORE_PATH, else ./imgstore)
      --help, -h     show help (also after a command: imgstore-admin put --help)
      --version      print the version

    exit status:
      0   success
      1   not found (get, rm), or an invalid image (validate)
      64  usage error
      65  bad input data (not an image, too large, malformed URL)
      74  I/O or storage error (cannot open, disk full, corrupt store)
    verify exits as fsck does: 0 no problems, 1 all repaired, 4 problems left,
      8 operational error, 16 usage error
    """

@MainActor
func run(_ argv: [String]) -> ExitCode {
    var arguments = argv
    // The command is the first argument that is not an option (or the value of --store).
    var index = 0
    while index < arguments.count, arguments[index].hasPrefix("-") {
        index += arguments[index] == "--store" ? 2 : 1
    }
    if arguments.contains("--version") && index >= arguments.count {
        Output.standardOutput("imgstore-admin \(version)\n")
        return .success
    }
    guard index < arguments.count else {
        if arguments.contains("--help") || arguments.contains("-h") {
            Output.standardOutput(topLevelHelp + "\n")
            return .success
        }
        Output.standardError("imgstore-admin: no command given (see imgstore-admin --help)\n")
        return .usage
    }
    let name = arguments.remove(at: index)
    guard let command = commands.first(where: { $0.spec.name == name }) else {
        Output.standardError("imgstore-admin: unknown command '\(name)' (see imgstore-admin --help)\n")
        return .usage
    }
    do {
        let parsed = try ArgumentParser.parse(arguments, for: command.spec)
        if parsed.has("--help") {
            Output.standardOutput(ArgumentParser.help(for: command.spec) + "\n")
            return .success
        }
        let storePath = parsed.value("--store") ?? ProcessInfo.processInfo.environment["IMGSTORE_PATH"] ?? "./imgstore"
        try command.run(parsed, context: CommandContext(storePath: storePath))
        return .success
    } catch {
        Output.standardError("imgstore-admin \(name): \(error.message)\n")
        return error.code
    }
}

exit(run(Array(CommandLine.arguments.dropFirst())).rawValue)
