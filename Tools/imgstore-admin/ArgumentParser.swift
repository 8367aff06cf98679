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
    /// `--` ends option parsing. Throws a usage failure naming the problem.
    static func parse(_ arguments: [String], for spec: CommandSpec) throws(CommandFailure) -> ParsedArguments {
        let table = spec.options + globalOptions
        var parsed = ParsedArguments()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
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
                if let inlineValue {
                    parsed.values[option.name] = inlineValue
                } else {
                    guard index < arguments.count else { throw usage("\(option.name) needs a value (\(placeholder))", spec) }
                    parsed.values[option.name] = arguments[index]
                    index += 1
                }
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
