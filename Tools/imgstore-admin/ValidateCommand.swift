import Foundation
import ImageStore

/// `validate [--deep] [--json] FILE...`: checks image files without a store.
enum ValidateCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "validate",
        summary: "Check that each FILE is a whole, valid PNG, JPEG, GIF or WebP image. Exits 1 if any is not.",
        arguments: "FILE...",
        options: [
            OptionSpec(name: "--deep", help: "also decode every pixel (PNG, JPEG): catches damaged compressed data"),
            OptionSpec(name: "--json", help: "one JSON object per file per line: path, ok, format, width, height, error"),
        ],
        positional: 1...Int.max,
        details: "A file that cannot be read is reported as invalid and the others are still checked.")

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let validator = ImageValidator()
        let mode: ValidationMode = arguments.has("--deep") ? .deep : .structure
        var allValid = true
        for path in arguments.positionals {
            var object = ValidationJSON(path: path, ok: false)
            let line: String
            do {
                let data = try PutCommand.readFile(path, limit: Int.max)
                let facts = try validator.validate(data, mode: mode)
                object = ValidationJSON(path: path, ok: true, format: facts.format.rawValue, width: facts.width, height: facts.height)
                line = "\(Describe.escaped(path)): ok, \(facts.format.rawValue) \(facts.width)x\(facts.height)"
            } catch let failure as CommandFailure {
                allValid = false
                object.error = failure.message
                line = "\(Describe.escaped(path)): \(failure.message)"
            } catch let error as ImageValidationError {
                allValid = false
                object.error = error.description
                object.format = ImageValidator.sniff((try? PutCommand.readFile(path, limit: Int.max)) ?? Data()).rawValue
                line = "\(Describe.escaped(path)): invalid: \(error.description)"
            } catch {
                allValid = false
                object.error = "\(error)"
                line = "\(Describe.escaped(path)): \(error)"
            }
            context.print(arguments.has("--json") ? JSONOutput.line(object) : line)
        }
        if !allValid { throw CommandFailure(code: .notFound, message: "some files are not valid images") }
    }
}
