import Foundation
import Locking

/// A fresh directory under the system's temporary directory, removed after `body` returns.
public func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
    let path = makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// A fresh, empty directory; the caller removes it. Whatever is left of it when the test process
/// exits is removed then (`TemporaryDirectories`), so a test that cannot remove its directory (an
/// async body, a server's data directory, a failure halfway) leaves no store behind in /tmp:
/// repeated runs once filled the disk with leftover 66 MB stores.
public func makeTemporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "imgstore-test-" + UUID().uuidString
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    TemporaryDirectories.made(path)
    return path
}

/// The directories `makeTemporaryDirectory()` made in this process, removed at its exit.
package enum TemporaryDirectories {
    private static let paths = LockedValue<[String]>([])
    /// Registers the exit handler once, the first time a directory is made.
    private static let registered: Void = { atexit { TemporaryDirectories.removeAll() } }()

    static func made(_ path: String) {
        _ = registered
        paths.withLock { $0.append(path) }
    }

    /// Whether `path` is removed at exit.
    package static func isRegistered(_ path: String) -> Bool { paths.withLock { $0.contains(path) } }

    /// Removes every directory still there; one that cannot be removed (a mount point still
    /// mounted) is reported on stderr, never silently kept.
    static func removeAll() {
        remove(paths.withLock { paths -> [String] in
            defer { paths.removeAll() }
            return paths
        })
    }

    /// Removes each of `paths` that is still there.
    package static func remove(_ paths: [String]) {
        for path in paths where FileManager.default.fileExists(atPath: path) {
            do { try FileManager.default.removeItem(atPath: path) } catch {
                FileHandle.standardError.write(Data("test support: could not remove \(path): \(error)\n".utf8))
            }
        }
    }
}
