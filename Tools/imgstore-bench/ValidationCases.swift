import Foundation
import ImageValidation
import Synchronization

/// imgstore's validator against the command-line checkers a user would run, over the same files: `pngcheck -q`,
/// `jpeginfo` (headers) and `jpeginfo -c` (full decode), each one process over every file of the set (so process
/// start-up is shared by the files: per file it would cost far more). The validator runs on the bytes in memory.
enum ValidationCases {
    static let all: [BenchmarkCase] = [
        BenchmarkCase(name: "validate.structure.png") { o in
            validate("validate.structure.png", .png, .structure, checker: ("pngcheck", ["-q"]), o)
        },
        BenchmarkCase(name: "validate.structure.jpeg") { o in
            validate("validate.structure.jpeg", .jpeg, .structure, checker: ("jpeginfo", []), o)
        },
        BenchmarkCase(name: "validate.structure.jpeg.entropy") { o in entropyScan("validate.structure.jpeg.entropy", o) },
        BenchmarkCase(name: "validate.deep.png") { o in
            // pngcheck inflates every IDAT and checks the zlib stream: the nearest thing to a decode it offers.
            validate("validate.deep.png", .png, .deep, checker: ("pngcheck", ["-q"]), o)
        },
        BenchmarkCase(name: "validate.deep.jpeg") { o in
            validate("validate.deep.jpeg", .jpeg, .deep, checker: ("jpeginfo", ["-c"]), o)
        },
    ]

    /// The files: images of the default size mix (fixed seed), split by format, written once to the scratch directory.
    static func files(_ format: ImageCorpus.Format, _ options: BenchmarkOptions) -> (paths: [String], images: [Data]) {
        let set = Workloads.cached("validate") {
            ImageSet.make(bytes: options.quick ? 2 << 20 : 24 << 20, minimumCount: 24, firstKey: 1_000_000, seed: 99)
        }
        let directory = options.scratch("validate")
        var paths: [String] = [], images: [Data] = []
        for (url, image) in zip(set.urls, set.images) where url.hasSuffix(format == .jpeg ? ".jpg" : ".png") {
            let path = directory + "/" + (url as NSString).lastPathComponent
            if !FileManager.default.fileExists(atPath: path) {
                guard FileManager.default.createFile(atPath: path, contents: image) else { fail("cannot write \(path)") }
            }
            paths.append(path)
            images.append(image)
        }
        return (paths, images)
    }

    static func validate(
        _ name: String, _ format: ImageCorpus.Format, _ mode: ValidationMode, checker: (tool: String, flags: [String]),
        _ options: BenchmarkOptions
    ) -> [Measurement] {
        let (paths, images) = files(format, options)
        var results = [measureValidator(name, images, counting: images.map(\.count), rounds: options.quick ? 2 : 10, mode, options)]
        guard let executable = Subprocess.find(checker.tool) else {
            FileHandle.standardError.write(Data("  \(checker.tool) not installed: skipped\n".utf8))
            return results
        }
        let total = images.reduce(0) { $0 + $1.count }
        let system = ([checker.tool] + checker.flags).joined(separator: " ")
        let runs = options.repetitions, processesPerRun = options.quick ? 1 : 3
        let childCPU = Mutex<Double>(0)
        var m = BenchmarkRunner.measure(
            name, system: checker.tool, threads: 1, opsPerThread: images.count * processesPerRun,
            batch: images.count, warmUp: false, repetitions: runs
        ) { _, range in
            let (status, cpu) = Subprocess.run(executable, checker.flags + paths)
            if status != 0 { fail("\(system) exited with \(status) on the generated images") }
            childCPU.withLock { $0 += cpu }
            return range.count == images.count ? total : 0
        }
        m.system = checker.tool
        // The checker's CPU time is its processes' (the measuring thread only waits): averaged over the runs,
        // since the runner keeps only the fastest run's wall time.
        m.cpuSeconds = childCPU.withLock { $0 } / Double(max(1, runs))
        results.append(m)
        FileHandle.standardError.write(Data(cpuComparison(results[0], m).utf8))
        return results
    }

    /// One line comparing CPU time per file: on a loaded machine (all 7 engineers' builds share 2 cores, and the
    /// scheduler shares CPU per session) wall-time ratios swing with the load; CPU time per file barely does.
    static func cpuComparison(_ ours: Measurement, _ checker: Measurement) -> String {
        let oursPerFile = ours.cpuSeconds / Double(ours.operations), theirsPerFile = checker.cpuSeconds / Double(checker.operations)
        func f(_ x: Double) -> String { String(format: "%.2f", x) }
        return "  \(ours.caseName): CPU per file imgstore \(f(oursPerFile * 1e6)) µs, \(checker.system) "
            + "\(f(theirsPerFile * 1e6)) µs: \(f(theirsPerFile / oursPerFile))× per CPU second (the table's ratio is wall time)\n"
    }
}

extension ValidationCases {
    /// Structure mode over the largest JPEGs of the set, counting only their entropy-coded bytes (from the end of
    /// the first SOS header to EOI): the speed of the walk that looks for markers, the part that grows with the image.
    static func entropyScan(_ name: String, _ options: BenchmarkOptions) -> [Measurement] {
        let images = Array(files(.jpeg, options).images.sorted { $0.count > $1.count }.prefix(8))
        let entropyBytes = images.map { image -> Int in
            guard let sos = (0..<(image.count - 3)).first(where: { image[$0] == 0xFF && image[$0 + 1] == 0xDA }) else {
                fail("\(name): a generated JPEG has no scan")
            }
            return image.count - 2 - (sos + 2 + (Int(image[sos + 2]) << 8 | Int(image[sos + 3])))
        }
        return [measureValidator(name, images, counting: entropyBytes, rounds: options.quick ? 20 : 400, .structure, options)]
    }

    /// The validator over `images` in memory, `rounds` times each; each validation counts `counting[i]` bytes.
    static func measureValidator(
        _ name: String, _ images: [Data], counting: [Int], rounds: Int, _ mode: ValidationMode, _ options: BenchmarkOptions
    ) -> Measurement {
        let validator = ImageValidator()
        return BenchmarkRunner.measure(
            name, system: "imgstore", threads: 1, opsPerThread: images.count * rounds, batch: 1,
            repetitions: options.repetitions
        ) { _, range in
            var bytes = 0
            for i in range {
                let ok = images[i % images.count].withUnsafeBytes { (try? validator.validate($0, mode: mode)) != nil }
                if !ok { fail("\(name): the validator rejected a generated image") }
                bytes += counting[i % images.count]
            }
            return bytes
        }
    }
}

/// Runs a program with `posix_spawn`, output discarded, and waits for it.
enum Subprocess {
    static func find(_ tool: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) where FileManager.default.isExecutableFile(atPath: directory + "/" + tool) {
            return directory + "/" + tool
        }
        return nil
    }

    /// The exit status (or 128 + signal) and the CPU time (user + system) the process used.
    static func run(_ executable: String, _ arguments: [String]) -> (status: Int32, cpuSeconds: Double) {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        if rc != 0 { fail("posix_spawn \(executable): \(String(cString: strerror(rc)))") }
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 && errno == EINTR {}
        let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import (macros).
        return (status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F), cpu)
    }
}
