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
      --version      print the version (also before a command, which then does not run)

    numbers: plain decimal. Seconds (--ttl, --timeout, --tier-timeout) are digits with an
      optional fraction and exponent (30, 2.5, 1.5e3), at least 0.001 (times are kept in
      milliseconds); counts and sizes are digits only. No sign, hex, inf, nan, spaces or _.
    text: URLs and other arguments that become keys (--base-url, --prefix) must be valid
      UTF-8 (else 64); file paths are not checked.

    exit status:
      0   success
      1   not found (get, rm; fetch: the origin answered 404 or 410), or an invalid file
          (validate: not an image, unreadable, over 64 MiB)
      64  usage error (also a number out of range or not plain decimal)
      65  bad input data (not an image, too large, malformed URL; fetch: a download that is
          not an image; warm: a corrupt or invalid object)
      66  no store at the --store path (read commands and rm, checkpoint, compact, expire create none)
      69  the shared tier is unavailable (unreachable, timed out, 5xx, no such bucket), or
          fetch's origin is (unreachable, past --timeout, 5xx or another unexpected status)
      74  I/O or storage error (cannot open, disk full, corrupt store, another process writes,
          standard output not writable)
      77  the shared tier refused the credentials
    fetch and warm exit with the most severe status among their URLs: 74, 77, 69, 65, 1.
    verify exits as fsck does: 0 no problems, 1 all repaired, 4 problems left,
      8 operational error, 16 usage error; when its report cannot be written, 8 is added
      to what it found: 8 clean, 9 all repaired, 12 problems left
    """
}

/// `--store`, else `$IMGSTORE_PATH`, else `./imgstore`. (The parser refuses an empty `--store`.)
func storePath(_ parsed: ParsedArguments, _ spec: CommandSpec) throws(CommandFailure) -> String {
    let path = parsed.value("--store") ?? ProcessInfo.processInfo.environment["IMGSTORE_PATH"] ?? "./imgstore"
    guard !path.isEmpty else { throw ArgumentParser.usage("IMGSTORE_PATH is empty: set it to the store's path, or pass --store PATH", spec) }
    return path
}

/// Runs the command `argv` (the arguments after the program name) names; `invalidUTF8` says
/// which of them are not valid UTF-8 (`ArgumentParser.argumentsNotValidUTF8`).
@MainActor
func run(_ argv: [String], invalidUTF8: [Int: String]) -> ExitCode {
    var arguments = argv
    // The command is the first argument that is not a global option (or the value of --store).
    // Any other option before it is a mistyped global option, not a command. --version there
    // answers without running the command, as --help does with the command's help.
    var index = 0
    var versionAsked = false
    while index < arguments.count, arguments[index].hasPrefix("-") {
        let option = arguments[index]
        switch option {
        case "--store": index += 2
        case "--help", "-h": index += 1
        case "--version": versionAsked = true; index += 1
        case _ where option.hasPrefix("--store="): index += 1
        default:
            Output.standardError("imgstore-admin: unknown option \(Describe.escaped(option)) (see imgstore-admin --help)\n")
            return .usage
        }
    }
    if versionAsked {
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
    // Indices into `arguments`, which no longer holds the command's name.
    let invalidAfterName = Dictionary(uniqueKeysWithValues: invalidUTF8.compactMap { entry in
        entry.key == index ? nil : (entry.key > index ? entry.key - 1 : entry.key, entry.value)
    })
    guard let command = commands.first(where: { $0.spec.name == name }) else {
        Output.standardError("imgstore-admin: unknown command '\(Describe.escaped(name))' (see imgstore-admin --help)\n")
        return .usage
    }
    let prefix = "imgstore-admin \(name)"
    do {
        let parsed = try ArgumentParser.parse(arguments, invalidUTF8: invalidAfterName, for: command.spec)
        if parsed.has("--help") {
            Output.standardOutput(ArgumentParser.help(for: command.spec) + "\n")
            return Output.exitStatus(for: .success, prefix: prefix)
        }
        let storePath = try storePath(parsed, command.spec)
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
exit(run(Array(CommandLine.arguments.dropFirst()), invalidUTF8: ArgumentParser.argumentsNotValidUTF8()).rawValue)
