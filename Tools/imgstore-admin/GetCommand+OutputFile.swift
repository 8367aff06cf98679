import Foundation

/// `get -o FILE`: where the bytes may go, and writing them there.
extension GetCommand {
    /// Refuses (64) an `-o` target that would overwrite the store being read: one of its files
    /// (the same device and inode, so also through a symbolic or a hard link) or any path
    /// inside its directory. Runs before the store is opened and before FILE is created or
    /// truncated: `open(O_TRUNC)` on data.mdb, while the store serves the image from its
    /// memory map, loses the whole store.
    static func refuseTargetInStore(_ target: String, store: String) throws(CommandFailure) {
        // No store directory: openStore reports that.
        guard let storeDirectory = FileIdentity(path: store) else { return }
        let final = resolvingLinks(target)
        try refuseStoreFile(FileIdentity(path: final), named: "-o \(target)", store: store)
        if ancestors(ofDirectory: parent(of: final)).contains(storeDirectory) {
            throw CommandFailure(code: .usage, message: "-o \(target) is inside the store directory \(store); "
                + "writing the image there could destroy the store. Write it outside the store directory.")
        }
    }

    /// Refuses (74) an `-o` target that names a standard descriptor closed when the tool started
    /// (`get URL -o /dev/stdout >&-`): the `/dev/null` standing in for it would swallow the image
    /// and the command would succeed. Any spelling counts (`/dev/stdout`, `/dev/fd/1`,
    /// `/proc/self/fd/1`, a link to one of them); `-o /dev/null` itself is what it says.
    static func refuseClosedStandardDescriptor(_ target: String) throws(CommandFailure) {
        for hop in linkChain(target) {
            guard let descriptor = standardDescriptor(named: hop), Output.wasClosedAtStart(descriptor) else { continue }
            let name = ["standard input", "standard output", "standard error"][Int(descriptor)]
            throw CommandFailure(code: .ioError, message: "cannot write \(target): it is \(name), which is closed")
        }
    }

    /// The descriptor among 0–2 that `path` names as an entry of this process's descriptor
    /// directory (`/proc/PID/fd/N` or `/proc/PID/task/TID/fd/N`, by where its directory really
    /// is: `/dev/fd` and `/proc/self` are links there), or nil.
    private static func standardDescriptor(named path: String) -> Int32? {
        let name = path.lastIndex(of: "/").map { path[path.index(after: $0)...] } ?? path[...]
        guard let descriptor = Int32(name), (0...2).contains(descriptor),
              let resolved = realpath(parent(of: path), nil) else { return nil }
        let directory = String(cString: resolved)
        free(resolved)
        let process = "/proc/\(getpid())"
        if directory == process + "/fd" { return descriptor }
        let parts = directory.split(separator: "/")
        let isThreads = parts.count == 5 && directory.hasPrefix(process + "/task/") && parts[4] == "fd"
        return isThreads ? descriptor : nil
    }

    /// Refuses (64) a standard output that is one of the store's files (`get URL >> STORE/data.mdb`:
    /// the shell opened it without truncating it, so refusing still saves the store).
    static func refuseStandardOutputInStore(store: String) throws(CommandFailure) {
        try refuseStoreFile(FileIdentity(descriptor: 1), named: "standard output", store: store)
    }

    /// Throws when `file` is one of the files in the store directory.
    private static func refuseStoreFile(_ file: FileIdentity?, named description: String, store: String) throws(CommandFailure) {
        guard let file else { return }
        // An unlistable directory has no names to match; -o's inside check still runs.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []
        if let name = names.sorted().first(where: { FileIdentity(path: store + "/" + $0) == file }) {
            throw CommandFailure(code: .usage, message: "\(description) is the store's own \(name) (the store at \(store)); "
                + "writing the image there would destroy the store. Write it outside the store directory.")
        }
    }

    /// Writes `bytes` into whatever `path` names, opened as `>` in a shell opens it, in chunks;
    /// returns the failure instead of throwing it (it runs inside the store's read).
    ///
    /// A reader that went away (`EPIPE`: `-o /dev/stdout | head -c 10` with SIGPIPE ignored)
    /// ends quietly, as on standard output. A regular file that could not take every byte is
    /// not left half-written: removed when this call created it, else left empty.
    static func write(_ bytes: UnsafeRawBufferPointer, to path: String) -> CommandFailure? {
        func failure(_ code: Int32) -> CommandFailure {
            CommandFailure(code: .ioError, message: "cannot write \(path): \(String(cString: strerror(code)))")
        }
        // O_EXCL first, so a failed write knows whether the file is its own to remove.
        var created = true
        var fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        if fd < 0 && errno == EEXIST {
            created = false
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        }
        guard fd >= 0 else { return failure(errno) }
        var info = stat()
        let regular = fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
        let written = Output.writeAll(fd, bytes)
        // A regular file's bytes are only known to be there once close succeeds (NFS reports late).
        let closed = close(fd) == 0 ? nil : errno
        if written == EPIPE { return nil }
        guard let code = written ?? closed else { return nil }
        if regular { _ = created ? unlink(path) : truncate(path, 0) }
        return failure(code)
    }

    /// The path `path` ends at once its symbolic links are followed (it may not exist: a
    /// dangling link's target), at most 40 links deep, as the kernel follows them.
    private static func resolvingLinks(_ path: String) -> String {
        linkChain(path).last ?? path
    }

    /// `path`, then each path its symbolic links lead to in turn (the last is no link), at most
    /// 40 links deep, as the kernel follows them.
    private static func linkChain(_ path: String) -> [String] {
        var chain = [path]
        var path = path
        for _ in 0..<40 {
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { return chain }
            var buffer = [UInt8](repeating: 0, count: Int(PATH_MAX))
            let count = buffer.withUnsafeMutableBytes { readlink(path, $0.baseAddress!, $0.count) }
            guard count > 0 else { return chain }
            let destination = String(decoding: buffer[0..<count], as: UTF8.self)
            path = destination.hasPrefix("/") ? destination : parent(of: path) + "/" + destination
            chain.append(path)
        }
        return chain
    }

    private static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// `directory` and every directory above it, by identity (empty when it does not exist).
    private static func ancestors(ofDirectory directory: String) -> [FileIdentity] {
        guard let resolved = realpath(directory, nil) else { return [] }
        var path = String(cString: resolved)
        free(resolved)
        var chain: [FileIdentity] = []
        while true {
            if let identity = FileIdentity(path: path) { chain.append(identity) }
            if path == "/" { return chain }
            path = parent(of: path)
        }
    }
}

/// A file's device and inode: the same file whatever name (link) reaches it.
private struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64

    /// The identity of what `path` names, following symbolic links; nil when it cannot be stat'ed.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }

    /// The identity of the file open as `descriptor`; nil when it is not open.
    init?(descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return nil }
        self.init(info)
    }

    private init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }
}
