#if canImport(Glibc)
import Glibc
#endif

/// Listing a directory for the commands, with the system's reason when it cannot be read
/// (Foundation's `contentsOfDirectory` reports "NSCocoaErrorDomain" texts, and leaves `errno`
/// to whatever its own later calls set).
enum DirectoryNames {
    /// The names in `path`, "." and ".." left out, unsorted.
    /// - Throws: `CommandFailure` with `.ioError`: "cannot read PATH: REASON".
    static func list(_ path: String) throws(CommandFailure) -> [String] {
        do throws(DirectoryReadError) { return try names(in: path) } catch {
            throw CommandFailure(code: .ioError, message: "cannot read \(Describe.escaped(path)): \(error.reason)")
        }
    }

    /// Why a directory could not be read: `strerror` of the failing call.
    struct DirectoryReadError: Error {
        let reason: String
        init(errno code: Int32) { reason = String(cString: strerror(code)) }
    }

    /// The names in `path`, or the reason it could not be read.
    static func names(in path: String) throws(DirectoryReadError) -> [String] {
        guard let directory = opendir(path) else { throw DirectoryReadError(errno: errno) }
        defer { closedir(directory) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(directory) else {
                if errno != 0 { throw DirectoryReadError(errno: errno) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
    }
}
