import CFileSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// An I/O failure of the log: the operation and the `errno` it failed with.
package struct LogIOError: Error, Sendable, Hashable, CustomStringConvertible {
    package var operation: String
    package var code: Int32

    package init(_ operation: String, code: Int32) {
        self.operation = operation
        self.code = code
    }

    package var description: String { "\(operation): \(String(cString: strerror(code)))" }
    /// Whether the file system is full.
    package var isNoSpace: Bool { code == ENOSPC }
}

/// One open segment file. The log writes through this protocol so tests can inject faults
/// (`ENOSPC`, `EIO`, a lost page cache) without a special kernel.
package protocol LogFile: AnyObject, Sendable {
    /// Writes `parts` back to back at `offset` (one `pwritev` where possible).
    func write(_ parts: [UnsafeRawBufferPointer], at offset: Int) throws(LogIOError)
    /// Makes everything written so far durable (`fdatasync`).
    func sync() throws(LogIOError)
    /// Bytes from the start whose blocks `open` allocated (`posix_fallocate`); 0 when unknown.
    /// The log writes zeros ahead only inside them, so zeros never take disk space of their own.
    var preallocatedBytes: Int { get }
    /// The whole file's current contents.
    func readAll() throws(LogIOError) -> [UInt8]
    /// Reads the whole file's current contents into the start of `buffer`, reusing its storage
    /// when it is large enough and not shared (a fresh buffer for each 64 MiB segment cost recovery a page
    /// fault and the kernel's zeroing for every page); returns how many bytes it holds.
    /// A `Data`, so that what recovery decodes can share the bytes instead of copying them
    /// (`LogEntry.put`'s image is a slice of it); a storage that such a slice still shares is
    /// copied before it is written to, as for any `Data`.
    func readAll(into buffer: inout Data) throws(LogIOError) -> Int
    /// The file's first `count` bytes, or all of it when it is shorter, in a fresh buffer.
    func readPrefix(_ count: Int) throws(LogIOError) -> Data
    func close()
}

extension LogFile {
    /// A fresh buffer each time, for files that have nothing better.
    package func readAll(into buffer: inout Data) throws(LogIOError) -> Int {
        buffer = Data(try readAll())
        return buffer.count
    }

    /// The whole file read and cut, for files that have nothing better.
    package func readPrefix(_ count: Int) throws(LogIOError) -> Data {
        Data(try readAll().prefix(count))
    }
}

/// The directory operations the log needs, behind a protocol for the same reason.
package protocol LogFileSystem: Sendable {
    /// Opens (creating when missing) the file at `path`; a new file is preallocated to
    /// `preallocate` bytes so that writes into it do not change its size.
    func open(_ path: String, preallocate: Int) throws(LogIOError) -> any LogFile
    func rename(_ from: String, to: String) throws(LogIOError)
    func remove(_ path: String) throws(LogIOError)
    /// Makes creations, renames and removals in `directory` durable.
    func syncDirectory(_ directory: String) throws(LogIOError)
    /// The names in `directory` ("." and ".." left out). A failure throws: recovery that
    /// took an unreadable directory for an empty one would skip the log and reuse its names.
    func contentsOfDirectory(_ directory: String) throws(LogIOError) -> [String]
    /// Whether the log should write zeros ahead of its write position in `directory`, in the
    /// background (WriteAheadLog+ZeroAhead.swift), through `PosixLogFileSystem` files of its
    /// own. True only for the real file system on ext4 or XFS; a file system that injects
    /// faults or counts writes for a test says false, so the log's writes stay the test's.
    func writesZerosAhead(in directory: String) -> Bool
}

extension LogFileSystem {
    package func writesZerosAhead(in directory: String) -> Bool { false }
}

extension LogFile {
    package var preallocatedBytes: Int { 0 }
}

/// The real file system, through POSIX calls.
package struct PosixLogFileSystem: LogFileSystem {
    package init() {}

    /// ext4 and XFS: their preallocated blocks are unwritten extents, which zeros turn into
    /// written ones. (ext2 and ext3 share ext4's magic number; they have no unwritten extents,
    /// and the zeros cost them only the writes.)
    package func writesZerosAhead(in directory: String) -> Bool {
        var type = 0
        guard imgstore_file_system_type(directory, &type) == 0 else { return false }
        return [0xEF53, 0x5846_5342].contains(type)
    }

    package func open(_ path: String, preallocate: Int) throws(LogIOError) -> any LogFile {
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw LogIOError("open \(path)", code: errno) }
        var status = stat()
        fstat(fd, &status)
        var preallocated = 0
        if status.st_size == 0 && preallocate > 0 {
            // Allocating the blocks up front means later fdatasyncs need not update the
            // file's size; a full disk shows up here, before anything is acknowledged.
            // Without room for a whole segment, the log still works, growing as it is written.
            if posix_fallocate(fd, 0, off_t(preallocate)) == 0 { preallocated = preallocate } else { ftruncate(fd, 0) }
        }
        return PosixLogFile(fd: fd, path: path, preallocatedBytes: preallocated)
    }

    package func rename(_ from: String, to: String) throws(LogIOError) {
        guard Glibc.rename(from, to) == 0 else { throw LogIOError("rename \(from)", code: errno) }
    }

    package func remove(_ path: String) throws(LogIOError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw LogIOError("remove \(path)", code: errno) }
    }

    package func syncDirectory(_ directory: String) throws(LogIOError) {
        do { try FileSystem.sync(directory) } catch {
            throw LogIOError("\(error.operation) directory \(directory)", code: error.code)
        }
    }

    package func contentsOfDirectory(_ directory: String) throws(LogIOError) -> [String] {
        guard let handle = opendir(directory) else { throw LogIOError("list \(directory)", code: errno) }
        defer { closedir(handle) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(handle) else {
                if errno != 0 { throw LogIOError("list \(directory)", code: errno) }
                return names
            }
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
    }
}

/// A segment file on disk.
final class PosixLogFile: LogFile {
    private let fd: Int32
    private let path: String

    let preallocatedBytes: Int

    init(fd: Int32, path: String, preallocatedBytes: Int) {
        self.fd = fd
        self.path = path
        self.preallocatedBytes = preallocatedBytes
    }

    deinit { close() }

    func write(_ parts: [UnsafeRawBufferPointer], at offset: Int) throws(LogIOError) {
        var position = offset
        var vectors = parts.filter { $0.count > 0 }.map {
            iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count)
        }
        var first = 0
        while first < vectors.count {
            let count = min(vectors.count - first, 1024)  // IOV_MAX
            let written = vectors[first...].withUnsafeBufferPointer { pwritev(fd, $0.baseAddress, Int32(count), off_t(position)) }
            guard written >= 0 else {
                if errno == EINTR { continue }
                throw LogIOError("write \(path)", code: errno)
            }
            position += written
            // Skip what was written; a short write resumes inside the vector it stopped in.
            var remaining = written
            while remaining > 0, first < vectors.count {
                if remaining >= vectors[first].iov_len {
                    remaining -= vectors[first].iov_len
                    first += 1
                } else {
                    vectors[first].iov_base = vectors[first].iov_base.advanced(by: remaining)
                    vectors[first].iov_len -= remaining
                    remaining = 0
                }
            }
        }
    }

    func sync() throws(LogIOError) {
        guard fdatasync(fd) == 0 else { throw LogIOError("fdatasync \(path)", code: errno) }
    }


    func readAll() throws(LogIOError) -> [UInt8] {
        let count = try size()
        var failure: LogIOError?
        // Uninitialised: every byte is read into before the array is used.
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { bytes, initialized in
            do throws(LogIOError) { try read(count, into: bytes.baseAddress) } catch { failure = error }
            initialized = failure == nil ? count : 0
        }
        if let failure { throw failure }
        return bytes
    }

    func readAll(into buffer: inout Data) throws(LogIOError) -> Int {
        let count = try size()
        if buffer.count < count {
            // Uninitialised (malloc'ed, not zeroed): every byte is read into before it is used,
            // and a whole segment is 64 MiB.
            guard let storage = malloc(max(count, 1)) else { throw LogIOError("allocating \(count) bytes for \(path)", code: ENOMEM) }
            buffer = Data(bytesNoCopy: storage, count: count, deallocator: .free)
        }
        var failure: LogIOError?
        buffer.withUnsafeMutableBytes { bytes in
            do throws(LogIOError) { try read(count, into: bytes.baseAddress) } catch { failure = error }
        }
        if let failure { throw failure }
        return count
    }

    func readPrefix(_ count: Int) throws(LogIOError) -> Data {
        let count = min(count, try size())
        // Uninitialised, as in `readAll(into:)`: every byte is read into before it is used.
        guard let storage = malloc(max(count, 1)) else { throw LogIOError("allocating \(count) bytes for \(path)", code: ENOMEM) }
        do { try read(count, into: storage) } catch {
            free(storage)
            throw error
        }
        // Only now: a `Data` of a few bytes keeps them inline and frees `storage` at once.
        return Data(bytesNoCopy: storage, count: count, deallocator: .free)
    }

    private func size() throws(LogIOError) -> Int {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw LogIOError("stat \(path)", code: errno) }
        return Int(status.st_size)
    }

    /// Reads the file's first `count` bytes into `target`.
    private func read(_ count: Int, into target: UnsafeMutableRawPointer?) throws(LogIOError) {
        var done = 0
        while done < count {
            let n = pread(fd, target! + done, count - done, off_t(done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw LogIOError("read \(path)", code: n < 0 ? errno : EIO) }
            done += n
        }
    }

    private let closed = LockedValue(false)

    func close() {
        guard !closed.withLock({ let was = $0; $0 = true; return was }) else { return }
        Glibc.close(fd)
    }
}

import Locking
import Synchronization
