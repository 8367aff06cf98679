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
    /// Seconds the lock looked held before it was taken (0 when it was free at once).
    let waitedSeconds: Double
    /// Whether the file holds this process's pid (not for a lock taken by `probe`).
    private let wrotePid: Bool

    /// The lock taken at once and without writing, for a read-only opener that restores a
    /// checkpoint (`DurableTier.open`): nil when a writer holds it, or when there is no lock
    /// file to take (no writer ever ran).
    static func probe(directory: String) -> WriterLock? {
        let fd = open(directory + "/" + fileName, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            return nil
        }
        return WriterLock(fd: fd)
    }

    private init(fd: Int32) {
        self.fd = fd
        waitedSeconds = 0
        wrotePid = false
    }

    /// Takes the lock, or throws `writerLocked` naming the pid that holds it.
    init(directory: String) throws(ImageStoreError) {
        let path = directory + "/" + Self.fileName
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .notWritable(path: directory, reason: "cannot create \(Self.fileName): \(String(cString: strerror(errno)))") }
        // A lock just released can look held for a moment: a child process another thread is
        // spawning holds a copy of every descriptor until its exec closes it. Retry briefly
        // before calling the store someone else's.
        let started = Date()
        let deadline = started.addingTimeInterval(0.5)
        var locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        var retried = false
        while !locked && errno == EWOULDBLOCK && Date() < deadline {
            retried = true
            usleep(10_000)
            locked = flock(fd, LOCK_EX | LOCK_NB) == 0
        }
        guard locked else {
            let holder = Self.holder(path)
            close(fd)
            throw .writerLocked(path: directory, holder: holder)
        }
        let pid = "\(getpid())\n"
        ftruncate(fd, 0)
        _ = pid.withCString { pwrite(fd, $0, strlen($0), 0) }
        self.fd = fd
        waitedSeconds = retried ? Date().timeIntervalSince(started) : 0
        wrotePid = true
    }

    /// The pid the lock's holder wrote into `writer.lock` (the last holder's, if none holds it
    /// now and it did not clear it), or nil when there is none to read (none written, or the
    /// file unreadable: a caller waits then, as for a holder that has not written it yet).
    static func holderPid(directory: String) -> Int32? {
        do { return Int32(try recordedPid(directory + "/" + fileName)) } catch { return nil }
    }

    /// Who holds the lock, for the error: "pid N", or why that is unknown.
    private static func holder(_ path: String) -> String {
        let pid: String
        do { pid = try recordedPid(path) } catch {
            return "pid unknown (\(WriterLock.fileName) cannot be read: \((error as NSError).localizedDescription))"
        }
        return pid.isEmpty ? "pid unknown" : "pid \(pid)"
    }

    /// What the holder wrote into the lock file at `path`, trimmed ("" when nothing).
    private static func recordedPid(_ path: String) throws -> String {
        try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit {
        if wrotePid { ftruncate(fd, 0) }
        close(fd)  // releases the flock
    }
}
