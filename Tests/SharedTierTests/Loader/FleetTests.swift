import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing
@testable import SharedTier

/// A fleet: three hosts, each its own process (`imgstore-loader-child`) with its own store,
/// sharing one real tier and one local origin. Every URL reaches the origin once for the
/// whole fleet.
// 10 minutes: the limit also counts the wait for one of `ServerSlots.limit` servers, which under the
// whole `swift test` (every server suite at once) took this suite past 3 minutes.
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(10)))
struct FleetTests {
    static let hosts = 3
    static let fixtures = ["photo-baseline.jpg", "photo-progressive.jpg", "shapes.png"]

    @Test func eachURLReachesTheOriginOnceForTheWholeFleet() async throws {
        try await withFleet { server, origin in
            // Host h first loads its own three URLs (nobody else has them yet), then, once every
            // host is ready, all nine: six of them come from the tier.
            let own = (0..<Self.hosts).map { host in
                Self.fixtures.map { origin.url("/fleet/host\(host)/\($0)") }
            }
            let all = own.flatMap { $0 }
            let directories = (0..<Self.hosts).map { _ in makeTemporaryDirectory() }
            defer { for directory in directories { try? FileManager.default.removeItem(atPath: directory) } }
            let children = try (0..<Self.hosts).map { host in
                try ChildProcess.Collecting(ChildProcess.product("imgstore-loader-child"), [
                    directories[host] + "/store", server.endpoint.absoluteString, S3Server.bucket,
                    S3Server.credentials.accessKeyID, S3Server.credentials.secretAccessKey,
                    own[host].joined(separator: ","), all.joined(separator: ","),
                ], withInput: true)
            }
            defer { for child in children { child.kill() } }
            for (host, child) in children.enumerated() {
                let ready = await offThePool { child.wait(for: "ready\n", timeout: 120) }
                try #require(ready, "host \(host) did not get ready: \(child.text)")
            }
            for child in children { child.send("go\n") }
            for (host, child) in children.enumerated() {
                let status = await offThePool { child.waitForExit(timeout: 120) }
                #expect(status == 0, "host \(host): \(child.text)")
            }

            for url in all {
                let path = String(url.dropFirst("http://127.0.0.1:\(origin.port)".count))
                #expect(try await origin.stats(path).requests == 1, "\(path)")
            }
            for (host, child) in children.enumerated() {
                let lines = child.text.split(separator: "\n")
                for url in all {
                    let mine = own[host].contains(url)
                    let expected = mine ? ["memory", "disk"] : ["shared"]  // the default store has no memory tier
                    let source = lines.first { $0.hasPrefix("load \(url) ") }.map { String($0.split(separator: " ").last!) }
                    #expect(source.map(expected.contains) == true, "host \(host) \(url): \(source ?? "not loaded")")
                }
                #expect(lines.filter { $0.hasPrefix("own ") }.allSatisfy { $0.hasSuffix(" network") })
            }
        }
    }
}

/// Runs a blocking wait on a thread of its own, so no Swift concurrency thread blocks.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: body()) }
    }
}
