import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Checks on the store directory before LMDB sees it, so each problem gets its own message.
enum StoreDirectory {
    /// The files LMDB and the store keep in a store directory (besides the log).
    static let storeFiles: Set<String> = ["data.mdb", "lock.mdb", "writer.lock", SpaceReserve.fileName,
                                          CheckpointFile.fileName, CheckpointFile.fileName + ".new"]

    /// Makes sure `path` is a writable directory, creating it (and its parents) when missing.
    /// Directories it creates are made durable (each parent is fsynced), so a power cut cannot
    /// take away a store that was already written to.
    static func prepare(_ path: String, fileSystem: any LogFileSystem = PosixLogFileSystem()) throws(ImageStoreError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw .notADirectory(path: path) }
        } else {
            // The directories about to be created, outermost first.
            var created = [URL(fileURLWithPath: path).standardizedFileURL]
            while case let parent = created[0].deletingLastPathComponent(), parent.path != created[0].path,
                  !FileManager.default.fileExists(atPath: parent.path) {
                created.insert(parent, at: 0)
            }
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                throw .notWritable(path: path, reason: "it does not exist and cannot be created (\(describe(error)))")
            }
            for directory in created {
                do { try fileSystem.syncDirectory(directory.deletingLastPathComponent().path) } catch {
                    throw .storage(path: path, detail: "syncing the directory that holds the new store failed: \(error)")
                }
            }
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw .notWritable(path: path, reason: String(cString: strerror(errno)))
        }
    }

    /// Describes what a directory without `data.mdb` holds, or nil when it holds nothing
    /// (a directory with only a stale `lock.mdb` counts as empty).
    static func describeForeignContents(_ path: String) -> String? {
        // A directory that cannot be listed shows nothing foreign: opening then fails on it with
        // the reason (LMDB cannot create its files), so nothing is hidden here.
        let names = listing(path).filter { !storeFiles.contains($0) && !$0.hasPrefix("wal-") }.sorted()
        guard !names.isEmpty else { return nil }
        let shown = names.prefix(3).joined(separator: ", ")
        return names.count == 1 ? "a file named \(shown)" : "\(names.count) files such as \(shown)"
    }

    /// The write-ahead log segments (not spares) in the store directory at `path`, by name.
    /// An unreadable directory lists none; opening reports that itself.
    static func logSegments(in path: String) -> [String] {
        listing(path).filter { WALFormat.segmentNumber(fromName: $0) != nil }.sorted()
    }

    /// The names in `path`, or none when it cannot be listed (the callers' documented choice:
    /// each says what an unreadable directory means for it).
    static func listing(_ path: String) -> [String] {
        do { return try FileManager.default.contentsOfDirectory(atPath: path) } catch { return [] }
    }

    /// The system's reason for a failed Foundation file operation ("Not a directory"): the
    /// text of the errno underneath, never Foundation's own sentence ("The operation could not
    /// be completed. (NSCocoaErrorDomain error 512.)"), which names no cause.
    private static func describe(_ error: any Error) -> String {
        let cause = (error as? CocoaError)?.underlying ?? error
        if let posix = cause as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
        let bridged = cause as NSError
        guard bridged.domain == NSPOSIXErrorDomain else { return "the system gave no reason" }
        return String(cString: strerror(Int32(truncatingIfNeeded: bridged.code)))
    }
}
