import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Room kept back on the store's file system so that a store which filled its own disk can
/// still free space: a removal, `expire` or the replay of an entry logged as the disk filled
/// needs a few new log and LMDB pages before it frees anything.
///
/// The writer keeps `space.reserve`, a file of `byteCount` allocated bytes, in the store
/// directory; puts never use it, so they are refused (`diskFull`) while it is still there. A
/// removal, an expiry sweep, or a replay that found the disk full releases it first (deletes
/// it), so they have that much room. A later open as writer makes it again once the file
/// system has room for it twice over. Nothing in it is data.
enum SpaceReserve {
    static let fileName = "space.reserve"
    /// Bytes kept back: room for the log records and LMDB pages of many removals, and for
    /// replaying an entry of up to about this size that was logged as the disk filled.
    static let byteCount = 1 << 20
    /// Free bytes under which the disk counts as full when freeing space.
    static let fullBelow = byteCount / 4

    /// At an open as writer: makes the reserve when it is missing and there is room. Failing
    /// to make it is not an error (the store works without it).
    static func prepare(in directory: String) {
        let path = directory + "/" + fileName
        guard !FileManager.default.fileExists(atPath: path),
              FileSystem.availableBytes(at: directory) ?? 0 >= 2 * byteCount else { return }
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        let allocated = posix_fallocate(fd, 0, off_t(byteCount)) == 0
        close(fd)
        if !allocated { unlink(path) }  // a partial reserve would only mislead
    }

    /// Before something that frees space: releases the reserve when the disk is (nearly) full.
    /// Returns a sentence for the user when it did.
    @discardableResult
    static func releaseIfFull(in directory: String) -> String? {
        let available = FileSystem.availableBytes(at: directory) ?? .max
        guard available < fullBelow else { return nil }
        return release(in: directory, available: available)
    }

    /// Releases the reserve whatever the free space (a replay that found the disk full).
    /// Returns a sentence for the user when there was one.
    static func release(in directory: String, available: Int? = nil) -> String? {
        let path = directory + "/" + fileName
        guard FileManager.default.fileExists(atPath: path), unlink(path) == 0 else { return nil }
        let free = available ?? FileSystem.availableBytes(at: directory) ?? 0
        return "the disk holding the store is full (\(free) bytes free): its space reserve (\(byteCount) bytes) was released so it can free space; remove entries (rm, expire) and compact, and a later open keeps a reserve again"
    }
}
