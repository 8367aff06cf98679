import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImageStoreTestSupport
import Testing

/// A mount made for one test (root only), always unmounted afterwards.
enum TemporaryMount {
    static let isAvailable = geteuid() == 0 && executable("mount") != nil && executable("umount") != nil
    static let unavailableReason: Comment = "mounting needs root and mount(8)/umount(8) on PATH"

    /// The first `name` on `PATH`.
    static func executable(_ name: String) -> String? {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Mounts a tmpfs of `size` (64 MiB unless given, as mount's `size=` option) at `path`
    /// (created when missing), runs `body`, unmounts.
    static func tmpfs(at path: String, size: String = "64m", _ body: () throws -> Void) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try mounted(at: path, [["-t", "tmpfs", "-o", "size=" + size, "tmpfs", path]], body)
    }

    /// Shows `directory` read-only at `path` (created when missing: a bind mount remounted
    /// `ro`, so writes there fail with `EROFS` even for root), runs `body`, unmounts.
    static func readOnlyBind(of directory: String, at path: String, _ body: () throws -> Void) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try mounted(at: path, [["--bind", directory, path], ["-o", "remount,bind,ro", path]], body)
    }

    /// Runs `mount` with each argument list in turn, then `body`, and always unmounts `path`.
    private static func mounted(at path: String, _ steps: [[String]], _ body: () throws -> Void) throws {
        var mountedOnce = false
        defer {
            // A child that another test is spawning holds copies of this process's descriptors
            // and mappings until its exec, which makes umount fail with "target is busy". Under
            // ThreadSanitizer, with other suites spawning children in a loop, that lasted over
            // the 2 s this once waited (CI, s6f-noim-2): wait up to 30 s, and name the holders
            // if it is still busy, so a real leak (a store file left open) shows who holds it.
            if mountedOnce {
                var result: ProcessResult?
                let deadline = Date().addingTimeInterval(30)
                repeat {
                    result = try? ChildProcess.run(executable("umount")!, [path])
                    if result?.status == 0 { break }
                    usleep(50_000)
                } while Date() < deadline
                #expect(result?.status == 0, "umount \(path): \(result?.standardError ?? "did not run"); held by: \(holders(of: path))")
            }
        }
        for arguments in steps {
            let run = try ChildProcess.run(executable("mount")!, arguments)
            guard run.status == 0 else { throw MountFailure(message: "mount \(arguments.joined(separator: " ")): \(run.standardError)") }
            mountedOnce = true
        }
        try body()
    }

    /// The processes with a file open or mapped under `path` ("PID COMMAND"), from `/proc`.
    private static func holders(of path: String) -> [String] {
        let processes = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return processes.filter { $0.allSatisfy(\.isNumber) }.sorted().compactMap { pid in
            let proc = "/proc/" + pid
            let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: proc + "/fd")) ?? []
            let opens = descriptors.contains { fd in
                (try? FileManager.default.destinationOfSymbolicLink(atPath: proc + "/fd/" + fd))?.hasPrefix(path) == true
            }
            let maps = (try? String(contentsOfFile: proc + "/maps", encoding: .utf8))?.contains(path) == true
            guard opens || maps else { return nil }
            let command = (try? String(contentsOfFile: proc + "/comm", encoding: .utf8)) ?? "?"
            return "\(pid) \(command.trimmingCharacters(in: .whitespacesAndNewlines))\(maps ? " (mapped)" : "")"
        }
    }

    struct MountFailure: Error { var message: String }
}
