import Foundation
import Locking
import ImageStore
import Synchronization

/// A log file layer that fails on command: the Nth write or sync from now returns `code`.
package final class FaultyLogFileSystem: LogFileSystem, Sendable {
    package enum Operation: Sendable { case write, sync, list, rename }
    private let real = PosixLogFileSystem()
    private let plan = LockedValue<(operation: Operation, countdown: Int, code: Int32)?>(nil)
    /// Whether a failing write first writes all it was given (whole records), as a `pwritev`
    /// that fails after its data reached the file, or an `fdatasync` error after `write`, can.
    package let writesWholeRecordsBeforeFailing = LockedValue(false)

    package init() {}

    /// Makes the `after`+1-th `operation` from now fail with `code` (e.g. ENOSPC, EIO).
    package func fail(_ operation: Operation, after: Int = 0, with code: Int32) {
        plan.withLock { $0 = (operation, after, code) }
    }

    /// Stops injecting faults.
    package func heal() { plan.withLock { $0 = nil } }

    func check(_ operation: Operation) throws(LogIOError) {
        let code: Int32? = plan.withLock { plan in
            guard let current = plan, current.operation == operation else { return nil }
            if current.countdown > 0 { plan!.countdown -= 1; return nil }
            return current.code  // keeps failing once it starts, as a dead disk would
        }
        if let code { throw LogIOError("injected \(operation)", code: code) }
    }

    package func open(_ path: String, preallocate: Int) throws(LogIOError) -> any LogFile {
        FaultyLogFile(real: try real.open(path, preallocate: preallocate), faults: self)
    }
    package func rename(_ from: String, to: String) throws(LogIOError) {
        try check(.rename)
        try real.rename(from, to: to)
    }
    package func remove(_ path: String) throws(LogIOError) { try real.remove(path) }
    package func syncDirectory(_ directory: String) throws(LogIOError) { try real.syncDirectory(directory) }
    package func contentsOfDirectory(_ directory: String) throws(LogIOError) -> [String] {
        try check(.list)
        return try real.contentsOfDirectory(directory)
    }
}

final class FaultyLogFile: LogFile {
    let real: any LogFile
    let faults: FaultyLogFileSystem

    init(real: any LogFile, faults: FaultyLogFileSystem) {
        self.real = real
        self.faults = faults
    }

    func write(_ parts: [UnsafeRawBufferPointer], at offset: Int) throws(LogIOError) {
        do {
            try faults.check(.write)
        } catch {
            // A write that fails part way: half of it reaches the file (or all of it).
            let total = parts.reduce(0) { $0 + $1.count }
            if faults.writesWholeRecordsBeforeFailing.withLock({ $0 }) {
                try? real.write(parts, at: offset)
            } else if let first = parts.first, total > 1 {
                try? real.write([UnsafeRawBufferPointer(rebasing: first.prefix(min(first.count, total / 2)))], at: offset)
            }
            throw error
        }
        try real.write(parts, at: offset)
    }
    func sync() throws(LogIOError) {
        try faults.check(.sync)
        try real.sync()
    }
    func readAll() throws(LogIOError) -> [UInt8] { try real.readAll() }
    func close() { real.close() }
}

/// A log file layer that keeps written bytes in memory until they are synced, so
/// `powerLoss()` can drop everything written after the last sync, as losing power would.
package final class PowerLossLogFileSystem: LogFileSystem, Sendable {
    private let real = PosixLogFileSystem()
    private let files = LockedValue<[PowerLossLogFile]>([])

    package init() {}

    /// Forgets every write not yet synced.
    package func powerLoss() {
        for file in files.withLock({ $0 }) { file.dropUnsynced() }
    }

    package func open(_ path: String, preallocate: Int) throws(LogIOError) -> any LogFile {
        let file = PowerLossLogFile(real: try real.open(path, preallocate: preallocate))
        files.withLock { $0.append(file) }
        return file
    }
    package func rename(_ from: String, to: String) throws(LogIOError) { try real.rename(from, to: to) }
    package func remove(_ path: String) throws(LogIOError) { try real.remove(path) }
    package func syncDirectory(_ directory: String) throws(LogIOError) { try real.syncDirectory(directory) }
    package func contentsOfDirectory(_ directory: String) throws(LogIOError) -> [String] { try real.contentsOfDirectory(directory) }
}

final class PowerLossLogFile: LogFile {
    private let real: any LogFile
    private let unsynced = LockedValue<[(offset: Int, bytes: [UInt8])]>([])

    init(real: any LogFile) { self.real = real }

    func write(_ parts: [UnsafeRawBufferPointer], at offset: Int) throws(LogIOError) {
        var bytes: [UInt8] = []
        for part in parts { bytes.append(contentsOf: part) }
        unsynced.withLock { $0.append((offset, bytes)) }
    }
    func sync() throws(LogIOError) {
        let pending = unsynced.withLock { let all = $0; $0 = []; return all }
        for (offset, bytes) in pending {
            try bytes.withUnsafeBytes { raw in Result { () throws(LogIOError) in try real.write([raw], at: offset) } }.get()
        }
        try real.sync()
    }
    func readAll() throws(LogIOError) -> [UInt8] { try real.readAll() }
    func close() { real.close() }
    func dropUnsynced() { unsynced.withLock { $0 = [] } }
}

/// A log file layer that can hold one write until released, and records the order in which
/// writes finish and files close, so tests can see what `close()` does to a leader mid-write,
/// and which thread did each I/O.
package final class GatedLogFileSystem: LogFileSystem, Sendable {
    private let real = PosixLogFileSystem()
    private let condition = NSCondition()
    private let state = LockedValue<(armed: Bool, held: Bool, released: Bool, events: [String])>((false, false, false, []))

    package init() {}

    /// What happened, in order: "write" when a write returned, "close" when a file closed.
    package var events: [String] { state.withLock { $0.events } }
    /// Every write, sync, rename, removal and directory sync, with the thread that did it.
    package let io = LockedValue<[(operation: String, thread: UInt)]>([])

    fileprivate func noteIO(_ operation: String) { io.withLock { $0.append((operation, UInt(pthread_self()))) } }

    /// The next write blocks until `release()`.
    package func holdNextWrite() { state.withLock { $0.armed = true } }

    package func waitUntilHeld() { wait { $0.held } }
    /// Whether a write is held now (for async tests, which poll instead of blocking a thread).
    package var isHeld: Bool { state.withLock { $0.held && !$0.released } }
    package func waitUntilClosed() { wait { $0.events.contains("close") } }

    package func release() {
        condition.lock()
        state.withLock { $0.released = true }
        condition.broadcast()
        condition.unlock()
    }

    fileprivate func write(_ body: () throws(LogIOError) -> Void) throws(LogIOError) {
        condition.lock()
        if state.withLock({ let armed = $0.armed; $0.armed = false; if armed { $0.held = true }; return armed }) {
            condition.broadcast()
            while !state.withLock({ $0.released }) { condition.wait() }
        }
        condition.unlock()
        defer { note("write") }
        noteIO("write")
        try body()
    }

    fileprivate func note(_ event: String) {
        condition.lock()
        state.withLock { $0.events.append(event) }
        condition.broadcast()
        condition.unlock()
    }

    private func wait(until done: ((armed: Bool, held: Bool, released: Bool, events: [String])) -> Bool) {
        condition.lock()
        while !state.withLock({ done($0) }) { condition.wait() }
        condition.unlock()
    }

    package func open(_ path: String, preallocate: Int) throws(LogIOError) -> any LogFile {
        GatedLogFile(real: try real.open(path, preallocate: preallocate), gate: self)
    }
    package func rename(_ from: String, to: String) throws(LogIOError) { noteIO("rename"); try real.rename(from, to: to) }
    package func remove(_ path: String) throws(LogIOError) { noteIO("remove"); try real.remove(path) }
    package func syncDirectory(_ directory: String) throws(LogIOError) { noteIO("syncDirectory"); try real.syncDirectory(directory) }
    package func contentsOfDirectory(_ directory: String) throws(LogIOError) -> [String] { try real.contentsOfDirectory(directory) }
}

final class GatedLogFile: LogFile {
    private let real: any LogFile
    private let gate: GatedLogFileSystem

    init(real: any LogFile, gate: GatedLogFileSystem) {
        self.real = real
        self.gate = gate
    }

    func write(_ parts: [UnsafeRawBufferPointer], at offset: Int) throws(LogIOError) {
        try gate.write { () throws(LogIOError) in try real.write(parts, at: offset) }
    }
    func sync() throws(LogIOError) {
        gate.noteIO("sync")
        try real.sync()
    }
    func readAll() throws(LogIOError) -> [UInt8] { try real.readAll() }
    func close() {
        real.close()
        gate.note("close")
    }
}
