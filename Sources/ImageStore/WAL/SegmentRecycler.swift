import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Keeps checkpointed segment files for reuse: overwriting a file whose blocks are already
/// written is cheaper to fdatasync than appending to a new one (no block allocation or extent
/// conversion to journal). A recycled file keeps its old records, which carry the old segment
/// number and so read as the end of the log (validity condition 3 in `WALFormat.swift`).
enum SegmentRecycler {
    /// Spare files kept at most.
    static let maxSpares = 2
    static let sparePrefix = "wal-spare-"

    /// The spare files' names, in order. - Throws: when the directory cannot be listed.
    static func spares(in directory: String, fileSystem: any LogFileSystem) throws(LogIOError) -> [String] {
        try fileSystem.contentsOfDirectory(directory).filter { $0.hasPrefix(sparePrefix) }.sorted()
    }

    /// The segment numbers spare files were retired from.
    static func spareNumbers(in directory: String, fileSystem: any LogFileSystem) throws(LogIOError) -> [UInt64] {
        try spares(in: directory, fileSystem: fileSystem).compactMap {
            WALFormat.segmentNumber(fromName: String($0.dropFirst(sparePrefix.count)))
        }
    }

    /// Renames a spare file to `path`; returns false when there is none. A spare that `trim`
    /// deleted between the listing and the rename (the writer queue trims while the log's
    /// leader rolls) is passed over for the next.
    /// - Throws: when the directory cannot be listed or the rename fails.
    static func take(in directory: String, fileSystem: any LogFileSystem, as path: String) throws(LogIOError) -> Bool {
        while let spare = try spares(in: directory, fileSystem: fileSystem).first {
            do {
                try fileSystem.rename(directory + "/" + spare, to: path)
                return true
            } catch where error.code == ENOENT && !FileManager.default.fileExists(atPath: directory + "/" + spare) {
                continue
            }
        }
        return false
    }

    /// Retires a checkpointed segment: kept as a spare while there are fewer than `spareLimit`
    /// (`maxSpares` unless the caller trims later), deleted otherwise. The caller syncs the
    /// directory afterwards. A segment that is already gone (retired by an earlier, partly
    /// failed checkpoint) is done.
    static func retire(_ number: UInt64, in directory: String, fileSystem: any LogFileSystem,
                       spareLimit: Int = maxSpares) throws(LogIOError) {
        let path = directory + "/" + WALFormat.segmentName(number)
        if try spares(in: directory, fileSystem: fileSystem).count < spareLimit {
            do {
                try fileSystem.rename(path, to: directory + "/" + sparePrefix + WALFormat.segmentName(number))
            } catch where error.code == ENOENT {
                return
            }
        } else {
            try fileSystem.remove(path)
        }
    }

    /// Deletes the spares beyond the first `maxSpares` (in name order), as listed once. The
    /// log's leader may take spares meanwhile (`take`, the first listed), and the list it sees
    /// shrinks as this deletes: `take` passes over a spare deleted under it. No directory sync:
    /// a deleted spare that comes back after a power cut is only deleted again.
    /// - Throws: when the directory cannot be listed or a spare not deleted.
    static func trim(in directory: String, fileSystem: any LogFileSystem) throws(LogIOError) {
        for spare in try spares(in: directory, fileSystem: fileSystem).dropFirst(maxSpares) {
            try fileSystem.remove(directory + "/" + spare)  // one already gone is done (`remove`)
        }
    }
}
