import Foundation
import ImageStoreTestSupport
import Testing
@testable import SharedTier

/// The tier on a small SeaweedFS cluster on loopback: 1 master, 3 volume servers with
/// replication 001 (every object on two of them), a filer with S3. Losing one volume server
/// loses nothing: what was stored before is still read whole, and new writes go on.
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(2)))
struct SharedTierClusterTests {
    @Test func readsAndWritesGoOnAfterOneOfThreeVolumeServersIsKilled() async throws {
        try await S3Server.with(.cluster) { server in
            let clock = ManualClock()
            let tier = try SharedTier(configuration: .init(s3: server.configuration(), now: clock.source))
            let before = (0..<12).map { "https://origin.test/cluster/before-\($0).jpg" }
            for (index, url) in before.enumerated() {
                #expect(await tier.upload(TestObjects.entry(url, body: TestObjects.bytes(index), now: clock.now)) == .stored)
            }
            // The server about to die holds replicas (else killing it would prove nothing).
            let held = try FileManager.default.contentsOfDirectory(atPath: server.directory + "/volume-2")
                .filter { $0.hasSuffix(".dat") }
                .map { try FileManager.default.attributesOfItem(atPath: server.directory + "/volume-2/" + $0)[.size] as? Int ?? 0 }
                .reduce(0, +)
            #expect(held > TestObjects.bytes(0).count, "volume-2 holds \(held) bytes of volumes")
            try await server.kill("volume-2")

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
                #expect(await tier.upload(TestObjects.entry(url, body: body, now: clock.now)) == .stored, "\(url)")
                guard case let .hit(entry) = await tier.lookup(url) else { Issue.record("\(url) is not a hit"); continue }
                #expect(entry.body == body)
            }
            #expect(tier.statistics.errorCount == 0, "\(tier.statistics.errors)")
        }
    }
}
