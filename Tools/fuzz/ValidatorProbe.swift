// A release-mode command-line probe over ImageValidation, built outside the package by
// Tools/validator-agreement.sh (verdicts) and Tools/fuzz/validator-throughput.sh (throughput).
//
//   validator-probe [--deep] [--strict] FILE... one line per file: "OK<TAB>path<TAB>facts" or "BAD<TAB>path<TAB>error"
//                                               (--strict: the strict trailing-data policy)
//   validator-probe --bench SECONDS FILE...     in-process throughput over the files, both modes
#if canImport(Glibc)
import Glibc
#endif
import Foundation

@main
struct ValidatorProbe {
    static func main() throws {
        var args = Array(CommandLine.arguments.dropFirst())
        if args.first == "--bench" {
            let seconds = Double(args[1])!
            try bench(files: Array(args.dropFirst(2)), seconds: seconds)
            return
        }
        var mode = ValidationMode.structure
        if args.first == "--deep" { mode = .deep; args.removeFirst() }
        var limits = ImageValidator.Limits.default
        if args.first == "--strict" { limits = .strict; args.removeFirst() }
        let validator = ImageValidator(limits: limits)
        for path in args {
            guard let data = FileManager.default.contents(atPath: path) else { print("BAD\t\(path)\tunreadable"); continue }
            do {
                let f = try validator.validate(data, mode: mode)
                print("OK\t\(path)\t\(f.format) \(f.width)x\(f.height) depth \(f.bitDepth) comps \(f.components) trailing \(f.trailingBytes)")
            } catch {
                print("BAD\t\(path)\t\(error.kind): \(error)")
            }
        }
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    static func bench(files: [String], seconds: Double) throws {
        let images: [[UInt8]] = files.compactMap { FileManager.default.contents(atPath: $0).map { [UInt8]($0) } }
        let totalBytes = images.reduce(0) { $0 + $1.count }
        let validator = ImageValidator()
        print("files: \(images.count), bytes: \(totalBytes)")
        for mode in [ValidationMode.structure, .deep] {
            var rounds = 0, ok = 0
            let start = now()
            var elapsed = 0.0
            repeat {
                for image in images {
                    if (try? validator.validate(image, mode: mode)) != nil { ok += 1 }
                }
                rounds += 1
                elapsed = now() - start
            } while elapsed < seconds
            let filesPerSecond = Double(rounds * images.count) / elapsed
            let mbPerSecond = Double(rounds * totalBytes) / elapsed / 1e6
            let perFile = elapsed / Double(rounds * images.count) * 1e6
            print(String(format: "%-9@ %10.0f files/s %9.1f MB/s %8.2f µs/file (accepted %d of %d per round)",
                         mode.rawValue as NSString, filesPerSecond, mbPerSecond, perFile, ok / rounds, images.count))
        }
    }
}
