import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ImageStoreTestSupport

/// `Tools/latency-origin.py` on 127.0.0.1: the sample images under any path, each answered
/// after `latency` milliseconds, with a count of the image requests it answered.
final class LatencyOrigin: Sendable {
    let child: ChildProcess.Collecting
    let port: Int
    var base: String { "http://127.0.0.1:\(port)/" }

    init(latencyMilliseconds: Int = 0) throws {
        child = try ChildProcess.Collecting(Tools.python3 ?? "python3", [
            Fixtures.repositoryRoot + "/Tools/latency-origin.py", Fixtures.directory, "--latency-ms", String(latencyMilliseconds),
        ])
        guard child.wait(for: "\n"),
              let port = Int(child.text.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") else {
            child.kill()
            throw AdminTestError(message: "the latency origin did not start: \(child.text)")
        }
        self.port = port
    }

    deinit { child.kill() }

    /// The image requests answered so far.
    func requests() async throws -> Int {
        let (data, _) = try await URLSession.shared.data(from: URL(string: base + "_count")!)
        guard let count = Int(String(decoding: data, as: UTF8.self)) else {
            throw AdminTestError(message: "the origin's count is '\(String(decoding: data, as: UTF8.self))'")
        }
        return count
    }
}
