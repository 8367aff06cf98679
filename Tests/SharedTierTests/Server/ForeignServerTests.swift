import Foundation
import ImageStoreTestSupport
import Testing
@testable import SharedTier

/// Two test processes at once: one starting a server on ports that the other's server holds
/// must not take the other's server for its own (it would then test a server that another
/// test may freeze, kill or fill at any moment).
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(3)))
struct ForeignServerTests {
    @Test func aStartOnPortsAnotherProcessesServerHoldsFailsInsteadOfReportingReady() async throws {
        try await S3Server.with { server in
            let directory = makeTemporaryDirectory()
            defer { _ = try? FileManager.default.removeItem(atPath: directory) }
            // Another test process (another nonce) starting a server on the same ports.
            let other = S3Server.credentials(forProcess: UInt64.random(in: 1...UInt64.max))
            #expect(other != S3Server.credentials, "another process's servers take other credentials")
            let result = try await S3Server.script(["start", String(server.port)], directory: directory, credentials: other)
            if result.status == 0 {
                _ = try await S3Server.script(["stop"], directory: directory, credentials: other)
            }
            #expect(result.status != 0, "the start failed: \(result.standardError)")
            #expect(!result.standardError.contains("ready at"), "\(result.standardError)")
            // The server that holds the ports is unharmed and still answers its own process.
            let client = try server.client()
            let outcome = try await client.put("still/mine", body: TestObjects.bytes(3), metadata: [:],
                                               contentType: "application/octet-stream", condition: .create)
            guard case .stored = outcome else { Issue.record("a put to the first server gave \(outcome)"); return }
            #expect(try await client.get("still/mine")?.body == TestObjects.bytes(3))
        }
    }
}
