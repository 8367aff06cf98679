import Foundation
import ImageStore
#if canImport(Glibc)
import Glibc
#endif

/// A file system the power-loss test can cut: an image file, loop-mounted at a fresh mount
/// point under a temporary directory.
///
/// `cut()` is a file-system shutdown that does not flush the log (`xfs_io -x -c shutdown`, as
/// xfstests simulates a power cut on ext4 and xfs): what was durable survives, what was only
/// in the page cache is gone, and every access fails with `EIO` until `remount()`. Needs root
/// and the tools in `LoopMount.requiredTools` (`Tools/install-deps.sh` installs them).
public final class LoopMount {
    /// The file systems the power-loss test runs on.
    public enum Kind: String, CaseIterable, Sendable, CustomStringConvertible {
        /// ext4 with its journal (the default `mkfs.ext4`).
        case ext4
        case xfs
        public var description: String { rawValue }
        var mkfs: (tool: String, arguments: [String]) {
            switch self {
            case .ext4: ("mkfs.ext4", ["-q", "-F"])
            case .xfs: ("mkfs.xfs", ["-q", "-f"])
            }
        }
    }

    public static let requiredTools = ["xfs_io", "mkfs.ext4", "mkfs.xfs", "mount", "umount", "losetup"]

    /// Whether this process may mount (root) and every tool is on `PATH`.
    public static var isAvailable: Bool { geteuid() == 0 && requiredTools.allSatisfy { tool($0) != nil } }

    public let kind: Kind
    /// Where the file system is mounted.
    public let mountPoint: String
    private let root: String
    private let image: String
    private var isMounted = false
    /// The loop device of the current mount.
    private var device: String?

    /// Makes a `megabytes`-sized (sparse) image, formats it as `kind`, mounts it, runs `body`,
    /// and always unmounts, detaches the loop device and deletes the image, even on a throw.
    public static func with<R>(_ kind: Kind, megabytes: Int = 1024, _ body: (LoopMount) throws -> R) throws -> R {
        let mount = try LoopMount(kind: kind, megabytes: megabytes)
        defer { mount.tearDown() }
        try mount.mount()
        return try body(mount)
    }

    private init(kind: Kind, megabytes: Int) throws {
        self.kind = kind
        root = makeTemporaryDirectory()
        image = root + "/\(kind).img"
        mountPoint = root + "/mnt"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: false)
        guard FileManager.default.createFile(atPath: image, contents: nil), truncate(image, off_t(megabytes) << 20) == 0 else {
            throw LoopMountError(message: "cannot make the image \(image): \(String(cString: strerror(errno)))")
        }
        try Self.run(kind.mkfs.tool, kind.mkfs.arguments + [image])
    }

    /// Makes the directory `name` under the mount point and makes it durable (fsyncs the
    /// mount point), so a cut cannot take it away with the stores in it.
    public func makeDirectory(_ name: String) throws -> String {
        let path = mountPoint + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try PosixLogFileSystem().syncDirectory(mountPoint)
        return path
    }

    /// Readies a cut: starts `xfs_io -x MOUNTPOINT`, which waits for its `shutdown` command.
    /// Starting a process takes milliseconds, longer than a checkpoint; writing a command to
    /// one already running lands the cut within microseconds of the moment chosen.
    public func armCut() throws -> Cut {
        guard let xfsIO = Self.tool("xfs_io") else { throw LoopMountError(message: "xfs_io is not on PATH") }
        return Cut(process: try ChildProcess.Collecting(xfsIO, ["-x", mountPoint], withInput: true), mountPoint: mountPoint)
    }

    /// A power cut ready to happen (`LoopMount.armCut`).
    public struct Cut {
        let process: ChildProcess.Collecting
        let mountPoint: String

        /// Cuts the power now: shuts the file system down without flushing its log
        /// (`shutdown`, as `xfs_io -x -c shutdown` does), and waits until it is down.
        public func fire() throws {
            process.send("shutdown\nquit\n", close: true)
            guard let status = process.waitForExit(timeout: 30) else {
                process.kill()
                throw LoopMountError(message: "xfs_io shutdown \(mountPoint) did not finish")
            }
            guard status == 0 else { throw LoopMountError(message: "xfs_io shutdown \(mountPoint) exited \(status): \(process.text)") }
        }

        /// Gives up a cut that was not fired (its process holds the file system open).
        public func disarm() { process.kill() }
    }

    /// Unmounts and mounts again: what the file system recovers is what the disk held at the cut.
    /// Every process using files on it must be gone first.
    public func remount() throws {
        try unmount()
        try detach()
        try mount()
    }

    /// Attaches the image to a new loop device and mounts it, then checks that the file
    /// system answers. After `umount` returns, the kernel can hold the shut-down superblock
    /// for a moment longer (measured here: `mount -o loop` then reused its loop device and
    /// every access gave `EIO`; on a new device xfs refused the "duplicate UUID"), so this
    /// uses a new loop device and retries the mount for a while.
    private func mount() throws {
        let attached = try Self.run("losetup", ["--find", "--show", image]).output
        device = attached.trimmingCharacters(in: .whitespacesAndNewlines)
        var last = ""
        for _ in 0..<100 where !isMounted {
            let result = try ChildProcess.run(Self.tool("mount")!, [device!, mountPoint])
            if result.status == 0 { isMounted = true } else { last = result.standardError; usleep(100_000) }
        }
        guard isMounted else { throw LoopMountError(message: "mount \(device!) \(mountPoint) failed: \(last)") }
        var status = stat()
        guard stat(mountPoint + "/.", &status) == 0 else {
            throw LoopMountError(message: "\(kind) on \(device!) does not answer after mounting: \(String(cString: strerror(errno)))")
        }
    }

    /// Detaches the loop device of the last mount.
    private func detach() throws {
        guard let attached = device else { return }
        try Self.run("losetup", ["-d", attached])
        device = nil
    }

    /// Unmounts, retrying while a killed process is still letting go of its files.
    private func unmount() throws {
        guard isMounted else { return }
        var last = ""
        for _ in 0..<50 {
            let result = try ChildProcess.run(Self.tool("umount")!, [mountPoint])
            if result.status == 0 { isMounted = false; return }
            last = result.standardError
            usleep(100_000)
        }
        throw LoopMountError(message: "umount \(mountPoint) failed: \(last)")
    }

    /// Unmounts, detaches every loop device backed by the image, deletes everything.
    private func tearDown() {
        do { try unmount() } catch {
            // Last resort, so no mount outlives the test; the failure is still reported.
            _ = try? ChildProcess.run(Self.tool("umount")!, ["-l", mountPoint])
            FileHandle.standardError.write(Data("LoopMount: \(error); lazily unmounted\n".utf8))
        }
        if let listing = try? ChildProcess.run(Self.tool("losetup")!, ["-j", image]) {
            for line in listing.output.split(separator: "\n") {
                guard let device = line.split(separator: ":").first else { continue }
                _ = try? ChildProcess.run(Self.tool("losetup")!, ["-d", String(device)])
            }
        }
        try? FileManager.default.removeItem(atPath: root)
    }

    /// Runs a tool found on `PATH`, throwing with its stderr when it fails.
    @discardableResult
    static func run(_ name: String, _ arguments: [String]) throws -> ProcessResult {
        guard let path = tool(name) else { throw LoopMountError(message: "\(name) is not on PATH") }
        let result = try ChildProcess.run(path, arguments)
        guard result.status == 0 else {
            throw LoopMountError(message: "\(name) \(arguments.joined(separator: " ")) exited \(result.status): \(result.standardError)")
        }
        return result
    }

    /// The executable `name` on `PATH`, or nil.
    public static func tool(_ name: String) -> String? { ToolsOnPath.find(name) }
}

public struct LoopMountError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
