import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The lock that makes one process the store's only writer: an exclusive `flock` on
/// `writer.lock` in the store directory, holding the owner's pid for error messages. The
/// kernel releases it when the process dies, however it dies.
final class WriterLock: Sendable {
    static let fileName = "writer.lock"
    private let fd: Int32

    /// Takes the lock, or throws `writerLocked` naming the pid that holds it.
    init(directory: String) throws(ImageStoreError) {
        let path = directory + "/" + Self.fileName
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .notWritable(path: directory, reason: "cannot create \(Self.fileName): \(String(cString: strerror(errno)))") }
        // A lock just released can look held for a moment: a child process another thread is
        // spawning holds a copy of every descriptor until its exec closes it. Retry briefly
        // before calling the store someone else's.
        let deadline = Date(timeIntervalSinceNow: 0.5)
        var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        while !locked && errno == EWOULDBLOCK && Date() < deadline {
            usleep(10_000)
            locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        }
        guard locked else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            close(fd)
            throw .writerLocked(path: directory, holder: holder.map { $0.isEmpty ? "pid unknown" : "pid \($0)" } ?? "pid unknown")
        }
        let pid = "\(getpid())\n"
        ftruncate(fd, 0)
        _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
        self.fd = fd
    }

    deinit {
        ftruncate(fd, 0)
        close(fd)  // releases the flock
    }
}
