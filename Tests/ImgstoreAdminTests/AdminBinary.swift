import Foundation
import ImageStoreTestSupport

/// Runs the `imgstore-admin` the end-to-end tests test (`adminBinaryPath`).
enum AdminBinary {
    static let path = adminBinaryPath

    /// Runs the tool with `arguments`.
    static func run(_ arguments: [String], environment: [String: String]? = nil, input: Data? = nil,
                    in directory: String? = nil) throws -> ProcessResult {
        try ChildProcess.run(path, arguments, environment: environment, input: input, currentDirectory: directory)
    }

    /// Runs `script` with `sh -c`, with `$ADMIN` set to the tool and `$1`… to `arguments`, so a
    /// test can close or redirect descriptors the way a shell user does (`>&-`, `> /dev/full`).
    static func shell(_ script: String, _ arguments: [String] = []) throws -> ProcessResult {
        var environment = ProcessInfo.processInfo.environment
        environment["ADMIN"] = path
        return try ChildProcess.run("/bin/sh", ["-c", script, "sh"] + arguments, environment: environment)
    }

    /// Every file of a store directory with its size and modification time (seconds,
    /// nanoseconds), to see that a command left it alone. lock.mdb is LMDB's reader table, which
    /// every reader writes by design: only its size is kept.
    static func fileFacts(_ store: String) throws -> [String: [Int]] {
        var files: [String: [Int]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: store) {
            var info = stat()
            guard stat(store + "/" + name, &info) == 0 else { throw AdminTestError(message: "cannot stat \(name)") }
            files[name] = name == "lock.mdb" ? [Int(info.st_size)] : [Int(info.st_size), info.st_mtim.tv_sec, info.st_mtim.tv_nsec]
        }
        return files
    }

    /// A `demo` store with one byte flipped in the middle of photo-baseline.jpg's stored bytes:
    /// a checksum mismatch for `verify` to find.
    static func makeDamagedDemoStore(_ path: String) throws {
        try makeDemoStore(path)
        let image = try Fixtures.image("photo-baseline.jpg")
        guard let offset = try FileCorruption.offsets(of: image.prefix(64), in: path + "/data.mdb").first else {
            throw AdminTestError(message: "photo-baseline.jpg's bytes are not in data.mdb")
        }
        try FileCorruption.flipByte(at: offset + image.count / 2, in: path + "/data.mdb")
    }

    /// A store with the sample images, made by `demo`.
    static func makeDemoStore(_ path: String) throws {
        let demo = try run(["--store", path, "demo", "--fixtures", Fixtures.directory])
        guard demo.status == 0 else { throw AdminTestError(message: "demo failed: \(demo.standardError)") }
    }
}

/// A test's set-up step failed (not what the test checks).
struct AdminTestError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Tools the tests need, found on `PATH`.
enum Tools {
    static func find(_ name: String) -> String? { ToolsOnPath.find(name) }

    static let python3 = find("python3")
    static let isRoot = getuid() == 0
}
