import Foundation

/// A log file layer that times every `fdatasync` of a log segment into `LogMetrics`, so the
/// log itself needs no hook for it. Everything else passes straight through.
struct TimedLogFileSystem: LogFileSystem {
    let base: any LogFileSystem
    let metrics: LogMetrics

    func open(_ path: String, preallocate: Int) throws(LogIOError) -> any LogFile {
        TimedLogFile(base: try base.open(path, preallocate: preallocate), metrics: metrics)
    }
    func rename(_ from: String, to: String) throws(LogIOError) { try base.rename(from, to: to) }
    func remove(_ path: String) throws(LogIOError) { try base.remove(path) }
    func syncDirectory(_ directory: String) throws(LogIOError) { try base.syncDirectory(directory) }
    func contentsOfDirectory(_ directory: String) throws(LogIOError) -> [String] {
        try base.contentsOfDirectory(directory)
    }
    func writesZerosAhead(in directory: String) -> Bool { base.writesZerosAhead(in: directory) }
}

private final class TimedLogFile: LogFile {
    let base: any LogFile
    let metrics: LogMetrics

    init(base: any LogFile, metrics: LogMetrics) {
        self.base = base
        self.metrics = metrics
    }

    func write(_ parts: [UnsafeRawBufferPointer], at offset: Int) throws(LogIOError) { try base.write(parts, at: offset) }
    func sync() throws(LogIOError) { try metrics.timedSync { () throws(LogIOError) in try base.sync() } }
    var preallocatedBytes: Int { base.preallocatedBytes }
    func readAll() throws(LogIOError) -> [UInt8] { try base.readAll() }
    func readAll(into buffer: inout Data) throws(LogIOError) -> Int { try base.readAll(into: &buffer) }
    func readPrefix(_ count: Int) throws(LogIOError) -> Data { try base.readPrefix(count) }
    func close() { base.close() }
}
