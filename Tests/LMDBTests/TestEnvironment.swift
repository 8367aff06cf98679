@testable import LMDB

extension Environment {
    /// An environment for a test in `directory`: a 16 MiB map that may grow to 1 GiB.
    /// - Throws: what `Environment.open` throws (`LMDBError.corrupted` for a damaged file).
    static func openForTest(_ directory: String) throws -> Environment {
        var options = EnvironmentOptions()
        options.initialMapSize = 1 << 24
        options.maxMapSize = 1 << 30
        return try Environment.open(path: directory, options: options)
    }
}
