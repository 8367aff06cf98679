import Foundation

/// The one way tests find the programs they run: on `PATH`, never at a fixed path, so a test
/// condition (`.enabled(if: ToolsOnPath.has(…), "…")`) sees what the run itself would use, and
/// a run with a `PATH` that hides a tool reports the tests that need it as skipped.
public enum ToolsOnPath {
    /// The first of `names` that is an executable file in a directory of `PATH`, or nil.
    public static func find(_ names: String...) -> String? { find(names) }

    public static func find(_ names: [String]) -> String? {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        for name in names {
            for directory in directories where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
                return "\(directory)/\(name)"
            }
        }
        return nil
    }

    /// Whether every one of `names` is on `PATH`.
    public static func has(_ names: String...) -> Bool { names.allSatisfy { find($0) != nil } }

    /// Whether the `python3` on `PATH` can import `module` (Pillow is `PIL`).
    public static func python3CanImport(_ module: String) -> Bool {
        guard let python3 = find("python3"),
              let result = try? ChildProcess.run(python3, ["-c", "import \(module)"]) else { return false }
        return result.status == 0
    }
}
