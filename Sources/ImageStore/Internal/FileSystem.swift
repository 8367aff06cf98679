#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// Facts about the file system holding a path, and the package's one way to make files durable.
package enum FileSystem {
    /// Bytes available to unprivileged writers on the file system holding `path` (`statvfs`).
    static func availableBytes(at path: String) -> Int? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// Disk bytes allocated to the file at `path` (its blocks, so a sparse file counts what it
    /// really takes); nil when it cannot be stat'ed.
    static func allocatedBytes(atPath path: String) -> Int? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return Int(status.st_blocks) * 512
    }

    // MARK: - fsync

    /// Makes the file or directory at `path` durable: opens it read-only and `fsync`s it. For a
    /// directory, that makes the creations, renames and removals in it durable.
    ///
    /// The one fsync helper of the package: the log, compaction and export all call it (or
    /// `sync(descriptor:path:)`), so no result is ever ignored.
    /// - Throws: `FileSyncError` naming the step (`open` or `fsync`), the path and the `errno`.
    package static func sync(_ path: String) throws(FileSyncError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw FileSyncError(operation: "open", path: path, code: errno) }
        defer { close(fd) }
        try sync(descriptor: fd, path: path)
    }

    /// `fsync`s the open descriptor `fd` of `path` (named in the error), retrying on `EINTR`.
    /// - Throws: `FileSyncError` with the `errno`. After a failed fsync the kernel may have
    ///   dropped the dirty pages, so the caller must treat the file's last writes as lost.
    package static func sync(descriptor fd: Int32, path: String) throws(FileSyncError) {
        while fsync(fd) != 0 {
            guard errno == EINTR else { throw FileSyncError(operation: "fsync", path: path, code: errno) }
        }
    }
}

/// A failed `FileSystem.sync`: the step, the path and the `errno` it failed with.
package struct FileSyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `open` or `fsync`.
    package var operation: String
    package var path: String
    package var code: Int32

    package var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
}
