import Foundation

/// Keeps checkpointed segment files for reuse: overwriting a file whose blocks are already
/// written is cheaper to fdatasync than appending to a new one (no block allocation or extent
/// conversion to journal). A recycled file keeps its old records, which carry the old segment
/// number and so read as the end of the log (validity condition 3 in `WALFormat.swift`).
enum SegmentRecycler {
    /// Spare files kept at most.
    static let maxSpares = 2
    static let sparePrefix = "wal-spare-"

    static func spares(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasPrefix(sparePrefix) }.sorted()
    }

    /// Renames a spare file to `path`; returns false when there is none (or it fails).
    static func take(in directory: String, fileSystem: any LogFileSystem, as path: String) -> Bool {
        guard let spare = spares(in: directory).first else { return false }
        return (try? fileSystem.rename(directory + "/" + spare, to: path)) != nil
    }

    /// Retires a checkpointed segment: kept as a spare while there are fewer than
    /// `maxSpares`, deleted otherwise. The caller syncs the directory afterwards.
    static func retire(_ number: UInt64, in directory: String, fileSystem: any LogFileSystem) throws(LogIOError) {
        let path = directory + "/" + WALFormat.segmentName(number)
        if spares(in: directory).count < maxSpares {
            try fileSystem.rename(path, to: directory + "/" + sparePrefix + WALFormat.segmentName(number))
        } else {
            try fileSystem.remove(path)
        }
    }
}
