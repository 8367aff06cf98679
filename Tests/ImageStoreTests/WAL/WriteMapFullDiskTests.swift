import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImageStore
import ImageStoreTestSupport
import Testing

/// Under `Configuration.writeMap`, LMDB writes through a shared mapping of a sparse file, so a
/// write into a block the file system cannot allocate is SIGBUS. The store allocates the
/// blocks a write needs first, and a full disk must be a typed error instead.
@Suite struct WriteMapFullDiskTests {
    /// Bytes the file system under `path` has free for this process.
    private func availableBytes(at path: String) -> Int {
        var status = statvfs()
        #expect(statvfs(path, &status) == 0, "statvfs \(path): \(String(cString: strerror(errno)))")
        return Int(status.f_bavail) * Int(status.f_frsize)
    }

    /// A file of `bytes` allocated bytes at `path` (the disk's room, taken away).
    private func fill(_ path: String, bytes: Int) throws {
        let fd = Glibc.open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        #expect(fd >= 0, "open \(path): \(String(cString: strerror(errno)))")
        defer { close(fd) }
        let rc = posix_fallocate(fd, 0, off_t(bytes))
        #expect(rc == 0, "posix_fallocate \(bytes) bytes: \(String(cString: strerror(rc)))")
    }

    /// Failed before (the test process died of SIGBUS): the applier's write transaction did not
    /// tell LMDB's environment how many bytes it would write, so only the fixed 64 MiB ahead of
    /// the pages in use was allocated, and replaying a logged entry larger than that wrote into
    /// holes of the mapped file on a disk that had no room for them.
    ///
    /// The entry is replayed at the next open, after a filler file has taken the disk's room:
    /// the open fails with a full disk (nothing applied, the log intact), and once the room is
    /// back the same open under `writeMap` replays it whole.
    @Test(.enabled(if: TemporaryMount.isAvailable, TemporaryMount.unavailableReason))
    func replayingAnEntryLargerThanTheAllocationAheadOnAFullDiskIsDiskFullNotSIGBUS() throws {
        try withTemporaryDirectory { directory throws in
            let mount = directory + "/mnt"
            try TemporaryMount.tmpfs(at: mount, size: "1g") {
                let path = mount + "/store"
                var configuration = makeConfiguration(maxMapSize: 1 << 30)
                configuration.logSegmentBytes = 64 << 20
                configuration.maxEntryBytes = 200 << 20
                configuration.maxUnappliedBytes = 400 << 20
                configuration.applyLog = false
                var generator = SeededGenerator(seed: 17)
                let big = generator.bytes(160 << 20)
                do {
                    let store = try ImageStore(path: path, configuration: configuration)
                    try store.put(big, for: "https://wm.test/big")
                    store.abandonForTesting()  // as a crash: nothing applied, the entry is only in the log
                }
                // Leave 150 MiB: the open's first transaction allocates 128 MiB ahead, and the
                // 160 MiB entry needs more than the 22 MiB that are then left.
                let filler = mount + "/filler"
                try fill(filler, bytes: availableBytes(at: mount) - (150 << 20))
                configuration.applyLog = true
                configuration.writeMap = true
                #expect {
                    let store = try ImageStore(path: path, configuration: configuration)
                    store.close()
                } throws: { error in
                    if case .diskFull = error as? ImageStoreError { return true }
                    Issue.record("the open failed with \(error), not diskFull")
                    return false
                }
                try FileManager.default.removeItem(atPath: filler)
                let store = try ImageStore(path: path, configuration: configuration)
                defer { store.close() }
                #expect(store.recoveryReport.recordsReplayed == 1)
                #expect(try store.image(for: "https://wm.test/big")?.data == big)
                try checkConsistency(of: store)
            }
        }
    }
}
