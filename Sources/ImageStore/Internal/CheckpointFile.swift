import Foundation
import LMDB

/// The file `lmdb-checkpoint`: the meta pages of `data.mdb` as the writer's last checkpoint made
/// them durable (`LMDB/MetaPages.swift` says why the writer keeps them and how an open uses them).
///
/// Format (integers little-endian), 568 bytes:
///
/// | offset | size | field                                                    |
/// |--------|------|----------------------------------------------------------|
/// | 0      | 8    | `IMGLMCKP`                                               |
/// | 8      | 8    | device of the data file the pages belong to              |
/// | 16     | 8    | inode of that data file                                  |
/// | 24     | 4    | LMDB's page size                                         |
/// | 28     | 2    | bytes kept per meta page, P (`MetaPages.prefixBytes`)    |
/// | 30     | 1    | 1 while a writer may commit unsynced after these pages; 0 once it closed (synced) |
/// | 31     | 1    | 0                                                        |
/// | 32     | 4    | pid of the writer that saved it                          |
/// | 36     | 4    | 0                                                        |
/// | 40     | 2P   | the first P bytes of meta page 0, then of meta page 1    |
/// | 40+2P  | 8    | `MetaPages.rootsChecksum`: XXH3-64 of the root pages they name |
/// | 48+2P  | 8    | XXH3-64 of everything before it                          |
///
/// An open goes back to the kept pages only when byte 30 is 1: after a clean close, LMDB is
/// whole as it stands, and a change made to it since (a tool, a test's damage) stays. A reader
/// that finds byte 30 set while a writer holds the store waits until that writer has saved the
/// file itself (its pid at 32): only then has it restored what a crash left (`DurableTier.open`).

/// It is replaced whole (written beside, synced, renamed over, directory synced), so a reader
/// finds the old file or the new one, never a mix.
enum CheckpointFile {
    /// What the file holds.
    struct Kept: Hashable, Sendable {
        var pages: MetaPages
        /// Whether a writer may have committed without syncing after `pages` (it did not close).
        var writerOpen: Bool
        /// The process that saved the file.
        var writerPid: Int32 = getpid()
    }

    static let fileName = "lmdb-checkpoint"
    private static let magic = Array("IMGLMCKP".utf8)
    private static var byteCount: Int { 40 + 2 * MetaPages.prefixBytes + 16 }

    static func path(in directory: String) -> String { directory + "/" + fileName }

    /// The pages the file keeps, or nil when there is none (a store no writer of format
    /// version 2 has checkpointed yet).
    /// - Throws: `corruptStore` when the file cannot be read or is damaged: LMDB's newest meta
    ///   page may then point to pages a power cut lost, and nothing says where to go back to.
    static func load(in directory: String) throws(ImageStoreError) -> Kept? {
        let path = path(in: directory)
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch CocoaError.fileReadNoSuchFile {
            return nil
        } catch {
            throw .corruptStore(path: directory, detail: "\(fileName) cannot be read (\((error as NSError).localizedDescription))")
        }
        let kept: Kept? = data.withUnsafeBytes { raw in
            let reader = ByteReader(bytes: raw)
            guard raw.count == byteCount, raw.prefix(8).elementsEqual(magic),
                  reader.integer(at: 24, as: UInt32.self).map(Int.init) ?? 0 >= MetaPages.prefixBytes,
                  reader.integer(at: 28, as: UInt16.self) == UInt16(MetaPages.prefixBytes), raw[30] <= 1, raw[31] == 0,
                  reader.integer(at: 36, as: UInt32.self) == 0,
                  reader.integer(at: byteCount - 8, as: UInt64.self) == Checksum.xxh3(raw.baseAddress, byteCount - 8)
            else { return nil }
            return Kept(pages: MetaPages(
                dataFile: FileIdentity(device: reader.integer(at: 8)!, inode: reader.integer(at: 16)!),
                pageSize: Int(reader.integer(at: 24, as: UInt32.self)!),
                bytes: Array(raw[40..<(40 + 2 * MetaPages.prefixBytes)]),
                rootsChecksum: reader.integer(at: 40 + 2 * MetaPages.prefixBytes)!), writerOpen: raw[30] == 1,
                writerPid: reader.integer(at: 32)!)
        }
        guard let kept else {
            throw .corruptStore(path: directory, detail: "\(fileName) is damaged, so what a crash of the last writer left in data.mdb cannot be undone safely. Read-only opens read data.mdb as it stands; to write again, move \(fileName) away (data.mdb is then opened as it stands, and the log replayed over it) and run `imgstore-admin verify`, which reports damage a power cut left")
        }
        return kept
    }

    /// Makes `kept` the file's content, durably, replacing the old one.
    /// - Throws: `storage` naming the step that failed.
    static func save(_ kept: Kept, in directory: String) throws(ImageStoreError) {
        let pages = kept.pages
        var bytes = magic
        bytes.reserveCapacity(byteCount)
        withUnsafeBytes(of: pages.dataFile.device.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: pages.dataFile.inode.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt32(pages.pageSize).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: UInt16(MetaPages.prefixBytes).littleEndian) { bytes += $0 }
        bytes += [kept.writerOpen ? 1 : 0, 0]
        withUnsafeBytes(of: kept.writerPid.littleEndian) { bytes += $0 }
        bytes += [0, 0, 0, 0]
        bytes += pages.bytes
        withUnsafeBytes(of: pages.rootsChecksum.littleEndian) { bytes += $0 }
        let checksum = bytes.withUnsafeBytes { Checksum.xxh3($0.baseAddress, $0.count) }
        withUnsafeBytes(of: checksum.littleEndian) { bytes += $0 }
        let path = path(in: directory)
        let temporary = path + ".new"
        do throws(FileSyncError) {
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw FileSyncError(operation: "open", path: temporary, code: errno) }
            defer { close(fd) }
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == bytes.count else { throw FileSyncError(operation: "write", path: temporary, code: written < 0 ? errno : EIO) }
            try FileSystem.sync(descriptor: fd, path: temporary)
            guard rename(temporary, path) == 0 else { throw FileSyncError(operation: "rename", path: temporary, code: errno) }
            try FileSystem.sync(directory)
        } catch {
            throw .storage(path: directory, detail: "keeping LMDB's checkpointed meta pages: \(error)")
        }
    }
}
