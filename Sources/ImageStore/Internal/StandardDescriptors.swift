import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Keeps the store's files off descriptors 0, 1 and 2.
///
/// A daemon or a cron job may start with standard input, output or error closed. The next
/// `open` then returns 0, 1 or 2, and anything the process later writes to "stdout" or
/// "stderr" (a log line, an error message) lands in that file: in LMDB's meta page, in the
/// reader table, in a log segment. SQLite guards against the same thing (`robust_open`).
/// Before a store opens any file, each closed descriptor among 0–2 is pointed at
/// `/dev/null`, so the store's files always get 3 or higher.
///
/// Not close-on-exec: these are the process's standard streams from now on, and children
/// should inherit them as such. Another thread that closes 0–2 while a store opens can still
/// defeat this; nothing in this process does.
package enum StandardDescriptors {
    /// Points every closed descriptor among 0, 1 and 2 at `/dev/null`.
    /// - Returns: the descriptors that were closed and now are `/dev/null`.
    /// - Throws: `storage` naming `path` when `/dev/null` cannot be opened while one is closed.
    @discardableResult
    package static func reserve(path: String) throws(ImageStoreError) -> [Int32] {
        var filled: [Int32] = []
        // open returns the lowest free descriptor: repeat until it is above 2.
        while true {
            let fd = open("/dev/null", O_RDWR)
            if fd < 0 {
                let reason = String(cString: strerror(errno))
                guard (0...2).allSatisfy({ fcntl($0, F_GETFD) >= 0 }) else {
                    throw .storage(path: path, detail: "a standard descriptor (0-2) is closed and /dev/null cannot be opened to fill it: \(reason)")
                }
                return filled
            }
            if fd > 2 {
                close(fd)
                return filled
            }
            filled.append(fd)
        }
    }
}
