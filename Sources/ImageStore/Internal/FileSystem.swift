#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Facts about the file system holding a path.
enum FileSystem {
    /// Bytes available to unprivileged writers on the file system holding `path` (`statvfs`).
    static func availableBytes(at path: String) -> Int? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }
}
