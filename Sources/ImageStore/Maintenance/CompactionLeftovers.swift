import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The compacted copy a compaction writes before it swaps it in (and the fresh environment a
/// salvage builds first), and the ones killed compactions and salvages leave behind.
///
/// The copy is `data.mdb.compacting-<pid>` inside the store directory, so the rename over
/// `data.mdb` never crosses a file system (a store directory may be a mount point). Builds
/// before this one wrote a directory `<store>.compacting-<pid>` next to the store; those are
/// cleaned up too.
enum CompactionLeftovers {
    static let marker = ".compacting-"

    /// The fresh environment (a directory) `verify --repair` builds its salvage in.
    static func salvagePath(forStoreAt path: String) -> String {
        path + "/salvage" + marker + String(getpid())
    }

    /// The copy this process writes for the store at `path`.
    static func copyPath(forStoreAt path: String) -> String {
        path + "/data.mdb" + marker + String(getpid())
    }

    /// Removes the copies of compactions that are no longer running: those whose pid is not
    /// alive, and this process's own (its compactions run one at a time, under the writer
    /// lock, and remove their copy when done). Returns how many were removed.
    ///
    /// Called only while holding the store's writer lock, which every compaction holds.
    /// - Throws: `storage` when a left-over cannot be removed.
    @discardableResult
    static func remove(forStoreAt path: String) throws(ImageStoreError) -> Int {
        let store = URL(fileURLWithPath: path).standardizedFileURL
        let parent = store.deletingLastPathComponent().path
        var found = leftovers(in: store.path, prefix: "data.mdb") + leftovers(in: store.path, prefix: "salvage")
        found += leftovers(in: parent, prefix: store.lastPathComponent)
        for leftover in found {
            do { try FileManager.default.removeItem(atPath: leftover) } catch {
                throw .storage(path: path, detail: "cannot remove \(leftover), left by a compaction that was killed: \((error as NSError).localizedDescription)")
            }
        }
        return found.count
    }

    /// Paths in `directory` named `<prefix>.compacting-<pid>` whose compaction is not running.
    private static func leftovers(in directory: String, prefix: String) -> [String] {
        // A directory that cannot be listed holds nothing this process could remove either.
        let names = StoreDirectory.listing(directory)
        return names.compactMap { name in
            guard name.hasPrefix(prefix + marker), let pid = pid_t(name.dropFirst(prefix.count + marker.count)),
                  pid > 0, pid == getpid() || !isAlive(pid) else { return nil }
            return directory + "/" + name
        }
    }

    /// Whether a process with this pid exists (`kill(pid, 0)`; `EPERM` means it exists).
    private static func isAlive(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }
}
