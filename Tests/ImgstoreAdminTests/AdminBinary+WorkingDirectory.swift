import Foundation
import ImageStoreTestSupport

extension AdminBinary {
    /// `path` made absolute against the test's working directory: CI passes a relative
    /// `IMGSTORE_ADMIN_BINARY` (`.build/release/imgstore-admin`), which a child started in
    /// another directory would not find.
    static let absolutePath = URL(fileURLWithPath: path).standardizedFileURL.path

    /// Runs the tool with `arguments` in the working directory `directory` (for relative
    /// `--store` paths, or to see that nothing was created there).
    static func run(_ arguments: [String], workingIn directory: String) throws -> ProcessResult {
        try ChildProcess.run(absolutePath, arguments, currentDirectory: directory)
    }
}
