import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The log's segments as `verify` read them: every segment file read whole, opened
/// `O_RDONLY` (never created, so verify needs no write permission and leaves no stray
/// `wal-N.log` behind), then handed to `LogRecovery` as a file system that serves those bytes.
///
/// Why a snapshot: a live writer retires segments at checkpoints and appends to the open one
/// while verify reads. Reading every byte *before* LMDB's applied-seq is read means whatever a
/// checkpoint retired (or recycled and began overwriting) before or during the reads held only
/// records at or below that applied-seq, so recovery's rules count it as applied, never as a
/// gap or damage (`ImageStore.checkLog` argues the rest).
struct LogSnapshot: LogFileSystem {
    let directory: String
    /// Segment file name → its bytes, as read.
    private let files: [String: Data]

    /// Lists the directory's segments and reads each whole. A segment gone by the time it is
    /// opened was retired by a live writer meanwhile: it is left out. `willOpen` runs with
    /// each segment's path just before it is opened (tests retire segments there).
    /// - Throws: `storage` when the directory cannot be listed or a segment cannot be read.
    static func read(directory: String, willOpen: ((String) -> Void)? = nil) throws(ImageStoreError) -> LogSnapshot {
        var files: [String: Data] = [:]
        for number in try LogRecovery.segments(in: directory, fileSystem: PosixLogFileSystem()) {
            let name = WALFormat.segmentName(number)
            let path = directory + "/" + name
            willOpen?(path)
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                if errno == ENOENT { continue }
                throw .storage(path: directory, detail: "reading the log: open \(path): \(String(cString: strerror(errno)))")
            }
            let file = PosixLogFile(fd: fd, path: path, preallocatedBytes: 0)  // closes fd
            defer { file.close() }
            var bytes = Data()
            do { _ = try file.readAll(into: &bytes); files[name] = bytes } catch {
                throw .storage(path: directory, detail: "reading the log: \(error)")
            }
        }
        return LogSnapshot(directory: directory, files: files)
    }

    // MARK: - LogFileSystem (reads only)

    func contentsOfDirectory(_ directory: String) throws(LogIOError) -> [String] { Array(files.keys) }

    func open(_ path: String, preallocate: Int) throws(LogIOError) -> any LogFile {
        guard let bytes = files[String(path.split(separator: "/").last ?? "")] else { throw LogIOError("open \(path)", code: ENOENT) }
        return SnapshotFile(bytes: bytes)
    }

    func rename(_ from: String, to: String) throws(LogIOError) { throw LogIOError("rename \(from) in a snapshot", code: EROFS) }
    func remove(_ path: String) throws(LogIOError) { throw LogIOError("remove \(path) in a snapshot", code: EROFS) }
    func syncDirectory(_ directory: String) throws(LogIOError) { throw LogIOError("sync \(directory) in a snapshot", code: EROFS) }
}

/// One segment's bytes in a `LogSnapshot`.
private final class SnapshotFile: LogFile {
    private let bytes: Data

    init(bytes: Data) { self.bytes = bytes }

    func write(_ parts: [UnsafeRawBufferPointer], at offset: Int) throws(LogIOError) { throw LogIOError("write to a snapshot", code: EROFS) }
    func sync() throws(LogIOError) {}
    func readAll() throws(LogIOError) -> [UInt8] { [UInt8](bytes) }
    /// The snapshot's own bytes, shared, not copied (recovery only reads them).
    func readAll(into buffer: inout Data) throws(LogIOError) -> Int {
        buffer = bytes
        return bytes.count
    }
    func close() {}
}
