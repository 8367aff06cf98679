/// A small table-driven parser: each command declares its options and positional
/// arguments, and the parser checks the command line against that table.
struct OptionSpec {
    /// The long name, with dashes: `--json`.
    var name: String
    /// A one-letter alias, with its dash: `-o`.
    var short: String?
    /// The placeholder of the value it takes (`FILE`), or nil for a flag.
    var value: String?
    var help: String
}

/// What a command accepts and how it is described in `--help`.
struct CommandSpec {
    var name: String
    var summary: String
    /// Positional arguments as shown in usage, e.g. `URL FILE`.
    var arguments: String
    var options: [OptionSpec] = []
    /// How many positional arguments are accepted.
    var positional: ClosedRange<Int>
    var details: String = ""
    /// The status a usage error ends this command with.
    var usageExitCode: ExitCode = .usage
}

/// The parsed command line of one command.
struct ParsedArguments {
    var flags: Set<String> = []
    var values: [String: String] = [:]
    var positionals: [String] = []

    func has(_ flag: String) -> Bool { flags.contains(flag) }
    func value(_ option: String) -> String? { values[option] }
}

enum ArgumentParser {
    /// Options every command accepts, anywhere on the line.
    static let globalOptions = [
        OptionSpec(name: "--store", value: "PATH", help: "the store directory (default: $IMGSTORE_PATH, else ./imgstore)"),
        OptionSpec(name: "--help", short: "-h", help: "show help"),
    ]

    /// Parses `arguments` (after the command name) against `spec` plus the global options.
    /// `--` ends option parsing. `invalidUTF8` holds, by index into `arguments`, those whose
    /// bytes are not valid UTF-8 (see `argumentsNotValidUTF8`). Throws a usage failure naming
    /// the problem: also for such an argument where text is expected (anything but a path:
    /// a URL becomes a key, and `CommandLine.arguments` has repaired its bytes to U+FFFD), and
    /// for an empty `--store`.
    static func parse(_ arguments: [String], invalidUTF8: [Int: String] = [:], for spec: CommandSpec) throws(CommandFailure) -> ParsedArguments {
        let table = spec.options + globalOptions
        let positionalNames = spec.arguments.split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "[].")) }
        var parsed = ParsedArguments()
        var index = 0
        var optionsEnded = false
        /// Fails when the argument at `at` is not valid UTF-8 and `placeholder` is not a path;
        /// `dropping` leading characters of its rendering (`--option=`) are not shown.
        func requireText(at: Int, _ placeholder: String, named name: String, dropping: Int = 0) throws(CommandFailure) {
            guard let bytes = invalidUTF8[at], !pathPlaceholders.contains(placeholder) else { return }
            throw usage("\(name) is not valid UTF-8: '\(bytes.dropFirst(dropping))'", spec)
        }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                let name = positionalNames.isEmpty ? "argument" : positionalNames[min(parsed.positionals.count, positionalNames.count - 1)]
                try requireText(at: index - 1, name, named: name)
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" { optionsEnded = true; continue }
            var name = argument
            var inlineValue: String?
            if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            guard let option = table.first(where: { $0.name == name || $0.short == name }) else {
                throw usage("unknown option \(name) for '\(spec.name)'", spec)
            }
            if let placeholder = option.value {
                let value: String
                if let inlineValue {
                    try requireText(at: index - 1, placeholder, named: option.name, dropping: name.count + 1)
                    value = inlineValue
                } else {
                    guard index < arguments.count else { throw usage("\(option.name) needs a value (\(placeholder))", spec) }
                    try requireText(at: index, placeholder, named: option.name)
                    value = arguments[index]
                    index += 1
                }
                // "" is no directory, and "no store at " (nothing after it) tells the user nothing.
                if option.name == "--store" && value.isEmpty { throw usage("--store needs a path", spec) }
                parsed.values[option.name] = value
            } else {
                guard inlineValue == nil else { throw usage("\(option.name) takes no value", spec) }
                parsed.flags.insert(option.name)
            }
        }
        if parsed.has("--help") { return parsed }
        guard spec.positional.contains(parsed.positionals.count) else {
            throw usage("'\(spec.name)' expects \(spec.arguments.isEmpty ? "no arguments" : spec.arguments), got \(parsed.positionals.count) argument(s)", spec)
        }
        return parsed
    }

    /// The placeholders of arguments that name files. Their bytes may be any the file system
    /// takes, so they are not required to be UTF-8 (but see `argumentsNotValidUTF8`).
    static let pathPlaceholders: Set<String> = ["PATH", "FILE", "DIR"]

    /// The arguments after the program name that are not valid UTF-8, by index, each shown
    /// with `\xHH` for every byte outside printable ASCII. Read from `CommandLine.unsafeArgv`:
    /// `CommandLine.arguments` repairs such bytes to U+FFFD, so `\xFF\xFE` and `\xFE\xFF` would
    /// read as the same URL. (A path argument keeps the repaired text, so it names another
    /// file than the one meant and fails to open; the tool does not handle such paths.)
    static func argumentsNotValidUTF8() -> [Int: String] {
        var invalid: [Int: String] = [:]
        for index in 0..<Int(CommandLine.argc) where index > 0 {
            guard let pointer = CommandLine.unsafeArgv[index], String(validatingCString: pointer) == nil else { continue }
            let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))
            invalid[index - 1] = bytes.map { byte in
                if (0x20..<0x7F).contains(byte) { return String(UnicodeScalar(byte)) }
                let hex = String(byte, radix: 16, uppercase: true)
                return "\\x" + (hex.count == 1 ? "0" : "") + hex
            }.joined()
        }
        return invalid
    }

    static func usage(_ message: String, _ spec: CommandSpec? = nil) -> CommandFailure {
        CommandFailure(code: spec?.usageExitCode ?? .usage, message: message + " (see imgstore-admin --help)")
    }

    /// The `--help` text of one command.
    static func help(for spec: CommandSpec) -> String {
        var lines = ["usage: imgstore-admin \(spec.name) [options] \(spec.arguments)".trimmingTrailingSpaces, "", spec.summary]
        if !spec.details.isEmpty { lines += ["", spec.details] }
        lines += ["", "options:"]
        for option in spec.options + globalOptions {
            var label = option.name + (option.value.map { " " + $0 } ?? "")
            if let short = option.short { label = short + ", " + label }
            lines.append("  " + label.padding(toLength: max(label.count, 22), withPad: " ", startingAt: 0) + "  " + option.help)
        }
        return lines.joined(separator: "\n")
    }
}

extension String {
    var trimmingTrailingSpaces: String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}

import Foundation
