import Foundation
import ImageStoreTestSupport
import Testing
@testable import SharedTier

/// The tier on a small SeaweedFS cluster on loopback: 1 master, 3 volume servers with
/// replication 001 (every object on two of them), a filer with S3. Losing one volume server
/// loses nothing: what was stored before is still read whole, and new writes go on.
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(3)))
struct SharedTierClusterTests {
    @Test func readsAndWritesGoOnAfterOneOfThreeVolumeServersIsKilled() async throws {
        try await S3Server.with(.cluster) { server in
            let clock = ManualClock()
            let tier = try SharedTier(configuration: .init(s3: server.configuration(), now: clock.source))
            let before = (0..<12).map { "https://origin.test/cluster/before-\($0).jpg" }
            for (index, url) in before.enumerated() {
                let outcome = await tier.upload(TestObjects.entry(url, body: TestObjects.bytes(index), now: clock.now))
                #expect(outcome == .stored, "\(url): \(outcome)")
            }
            // Kill the volume server holding the most volume data: it holds replicas of what
            // was just stored (killing an empty one would prove nothing).
            let held = try (1...3).map { number -> (name: String, bytes: Int) in
                let directory = server.directory + "/volume-\(number)"
                let bytes = try FileManager.default.contentsOfDirectory(atPath: directory)
                    .filter { $0.hasSuffix(".dat") }
                    .map { try FileManager.default.attributesOfItem(atPath: directory + "/" + $0)[.size] as? Int ?? 0 }
                    .reduce(0, +)
                return (name: "volume-\(number)", bytes: bytes)
            }
            let victim = held.max { $0.bytes < $1.bytes }!
            #expect(victim.bytes > TestObjects.bytes(0).count, "volume servers hold \(held)")
            try await server.kill(victim.name)

            for (index, url) in before.enumerated() {
                guard case let .hit(entry) = await tier.lookup(url) else {
                    Issue.record("\(url), stored before the volume server died, is not a hit: \(tier.statistics)")
                    continue
                }
                #expect(entry.body == TestObjects.bytes(index))
            }
            let after = (0..<12).map { "https://origin.test/cluster/after-\($0).jpg" }
            for (index, url) in after.enumerated() {
                let body = TestObjects.bytes(100 + index)
                let outcome = await tier.upload(TestObjects.entry(url, body: body, now: clock.now))
                #expect(outcome == .stored, "\(url): \(outcome)")
                guard case let .hit(entry) = await tier.lookup(url) else { Issue.record("\(url) is not a hit"); continue }
                #expect(entry.body == body)
            }
            #expect(tier.statistics.errorCount == 0, "\(tier.statistics.errors)")
        }
    }
}
