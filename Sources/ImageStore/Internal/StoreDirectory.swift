import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Checks on the store directory before LMDB sees it, so each problem gets its own message.
enum StoreDirectory {
    /// The files LMDB keeps in a store directory.
    static let storeFiles: Set<String> = ["data.mdb", "lock.mdb", "writer.lock"]

    /// Makes sure `path` is a writable directory, creating it (and its parents) when missing.
    static func prepare(_ path: String) throws(ImageStoreError) {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else { throw .notADirectory(path: path) }
        } else {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            } catch {
                throw .notWritable(path: path, reason: "it does not exist and cannot be created (\(describe(error)))")
            }
        }
        guard access(path, W_OK | X_OK) == 0 else {
            throw .notWritable(path: path, reason: String(cString: strerror(errno)))
        }
    }

    /// Describes what a directory without `data.mdb` holds, or nil when it holds nothing
    /// (a directory with only a stale `lock.mdb` counts as empty).
    static func describeForeignContents(_ path: String) -> String? {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [])
            .filter { !storeFiles.contains($0) && !$0.hasPrefix("wal-") }.sorted()
        guard !names.isEmpty else { return nil }
        let shown = names.prefix(3).joined(separator: ", ")
        return names.count == 1 ? "a file named \(shown)" : "\(names.count) files such as \(shown)"
    }

    private static func describe(_ error: any Error) -> String {
        (error as NSError).localizedDescription
    }
}
