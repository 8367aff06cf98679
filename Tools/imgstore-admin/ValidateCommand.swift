import Dispatch
import Foundation
import ImageStore
import Synchronization

/// `validate [--deep] [--strict] [--json] FILE...`: checks image files without a store, on all cores.
enum ValidateCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "validate",
        summary: "Check that each FILE is a whole, valid PNG, JPEG, GIF or WebP image. Exits 1 if any is not.",
        arguments: "FILE...",
        options: [
            OptionSpec(name: "--deep", help: "also decode every pixel (PNG, JPEG): catches damaged compressed data"),
            OptionSpec(name: "--strict", help: "reject bytes after the end marker (IEND, EOI, GIF trailer); default: accept and count them"),
            OptionSpec(name: "--json", help: "one JSON object per file per line: path, ok, format, width, height, trailingBytes, error"),
        ],
        positional: 1...Int.max,
        details: """
            Files are checked in parallel on all cores; the lines come out in the order the files were given.
            A file that cannot be read is reported as invalid and the others are still checked. As with put,
            at most the entry size limit (64 MiB) plus one byte of each file is read: a larger file (or an
            endless one, such as /dev/zero) is invalid, "larger than the limit of 67108864 bytes per entry".
            """)

    /// The most bytes of a file that are read: what a store takes as one entry (put's limit).
    static let limit = ImageStore.Configuration().maxEntryBytes

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        keepLargeBuffersInTheHeap()
        let validator = ImageValidator(limits: arguments.has("--strict") ? .strict : .default)
        let mode: ValidationMode = arguments.has("--deep") ? .deep : .structure
        let json = arguments.has("--json")
        let paths = arguments.positionals

        // Each worker files its line under the file's index; whoever completes the next line in order prints
        // it and every finished line after it, so output is in argument order and streams as files finish.
        struct Lines { var done: [(line: String, ok: Bool)?]; var printed = 0; var allValid = true }
        let lines = Mutex(Lines(done: Array(repeating: nil, count: paths.count)))
        DispatchQueue.concurrentPerform(iterations: paths.count) { index in
            let result = check(paths[index], validator: validator, mode: mode, json: json)
            lines.withLock { state in
                state.done[index] = result
                while state.printed < state.done.count, let next = state.done[state.printed] {
                    context.print(next.line)
                    if !next.ok { state.allValid = false }
                    state.done[state.printed] = nil   // printed: let the line go
                    state.printed += 1
                }
            }
        }
        if !lines.withLock({ $0.allValid }) { throw CommandFailure(code: .notFound, message: "some files are not valid images") }
    }

    /// Every file needs buffers of a few MiB (its bytes, the inflated PNG data, libjpeg's coefficient and row
    /// buffers). glibc serves those with a fresh mmap each and unmaps them on free, so each file paid for page
    /// faults and zeroing again (a third of the CPU time over a directory of photos went to the kernel). A short
    /// process checking files one after another does better keeping freed blocks in the heap for the next file.
    static func keepLargeBuffersInTheHeap() {
        #if canImport(Glibc)
        // <malloc.h> is not in Swift's Glibc module: mallopt and its parameters (M_TRIM_THRESHOLD -1,
        // M_MMAP_THRESHOLD -3) by hand. Without it (another libc) the command is only slower.
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: Mallopt.self)
        _ = mallopt(-3, 64 << 20)
        _ = mallopt(-1, 256 << 20)
        #endif
    }

    /// One file's output line and whether it is a valid image.
    static func check(_ path: String, validator: ImageValidator, mode: ValidationMode, json: Bool) -> (line: String, ok: Bool) {
        var object = ValidationJSON(path: path, ok: false)
        let line: String
        do {
            let data = try PutCommand.readFile(path, limit: limit)
            do {
                let facts = try validator.validate(data, mode: mode)
                object = ValidationJSON(path: path, ok: true, format: facts.format.rawValue, width: facts.width,
                                        height: facts.height, trailingBytes: facts.trailingBytes)
                var notes: [String] = []
                if facts.trailingBytes > 0 { notes.append("\(facts.trailingBytes) bytes after the end marker") }
                if mode == .deep && !facts.isDecodedByDeepMode { notes.append("structure only: no decoder for this variant") }
                line = "\(Describe.escaped(path)): ok, \(facts.format.rawValue) \(facts.width)x\(facts.height)"
                    + (notes.isEmpty ? "" : " (\(notes.joined(separator: "; ")))")
            } catch {
                object.error = error.description
                // Bytes that match no signature have no format: null, as in import's lines.
                let sniffed = ImageValidator.sniff(data)
                object.format = sniffed == .unknown ? nil : sniffed.rawValue
                line = "\(Describe.escaped(path)): invalid: \(error.description)"
            }
        } catch where error.code == .dataError {
            // Too large: an invalid file like the others, without the path said twice.
            object.error = PutCommand.tooLarge(limit)
            line = "\(Describe.escaped(path)): invalid: \(PutCommand.tooLarge(limit))"
        } catch {
            object.error = error.message
            line = "\(Describe.escaped(path)): \(error.message)"
        }
        return (json ? JSONOutput.line(object) : line, object.ok)
    }
}
