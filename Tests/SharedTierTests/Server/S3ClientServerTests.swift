import Foundation
import Testing
@testable import SharedTier

/// The S3 client against a real SeaweedFS server: each test starts its own.
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(3)))
struct S3ClientServerTests {
    // MARK: - Round trips

    @Test func putGetHeadListRoundTrip() async throws {
        try await S3Server.with { server in
            let client = try server.client()
            let body = TestObjects.bytes(1)
            let outcome = try await client.put("t/a b+c", body: body, metadata: ["note": "first"],
                                               contentType: "application/octet-stream", condition: .create)
            guard case let .stored(etag) = outcome else { Issue.record("create gave \(outcome)"); return }
            let object = try #require(try await client.get("t/a b+c"))
            #expect(object.body == body)
            #expect(object.head.metadata["note"] == "first")
            #expect(object.head.bodySHA256 == Digest.hex(Digest.sha256(body)))
            #expect(object.head.etag == etag)
            let head = try #require(try await client.head("t/a b+c"))
            #expect(head.contentLength == body.count)
            #expect(head.metadata == object.head.metadata)
            #expect(try await client.get("t/missing") == nil)
            #expect(try await client.head("t/missing") == nil)
        }
    }

    /// Five keys listed two at a time: every key once, in order, across continuation tokens,
    /// with a prefix that needs encoding (space, plus) and must be matched exactly.
    @Test func listPagesThroughEveryKeyInOrder() async throws {
        try await S3Server.with { server in
            let client = try server.client()
            let keys = (0..<5).map { "list me/+\($0)" }
            for key in keys.reversed() {
                _ = try await client.put(key, body: TestObjects.bytes(key.count), metadata: [:],
                                         contentType: "application/octet-stream", condition: .create)
            }
            _ = try await client.put("list other/x", body: TestObjects.bytes(9), metadata: [:],
                                     contentType: "application/octet-stream", condition: .create)
            var listed: [String] = []
            var token: String?
            var pages = 0
            repeat {
                let page = try await client.list(prefix: "list me/", continuationToken: token, maxKeys: 2)
                listed += page.objects.map(\.key)
                token = page.nextContinuationToken
                pages += 1
            } while token != nil && pages < 10
            #expect(listed == keys)
            #expect(pages >= 3)
        }
    }

    // MARK: - Races between hosts

    @Test func twoCreatesOfOneKeyOneWinsTheOtherGets412() async throws {
        try await S3Server.with { server in
            let first = try server.client()
            let second = try server.client()
            async let a = first.put("race/create", body: TestObjects.bytes(1), metadata: ["host": "a"],
                                    contentType: "application/octet-stream", condition: .create)
            async let b = second.put("race/create", body: TestObjects.bytes(2), metadata: ["host": "b"],
                                     contentType: "application/octet-stream", condition: .create)
            let outcomes = try await [a, b]
            let winners = outcomes.filter { if case .stored = $0 { return true } else { return false } }
            #expect(winners.count == 1, "outcomes: \(outcomes)")
            #expect(outcomes.contains(.preconditionFailed))
            // The object is the winner's, whole.
            let object = try #require(try await first.get("race/create"))
            let winner = object.head.metadata["host"]
            #expect(object.body == TestObjects.bytes(winner == "a" ? 1 : 2))
            // A later create loses too, without an error.
            #expect(try await first.put("race/create", body: TestObjects.bytes(3), metadata: [:],
                                        contentType: "application/octet-stream", condition: .create) == .preconditionFailed)
        }
    }

    @Test func replaceWithAStaleIfMatchGets412AndKeepsTheNewerObject() async throws {
        try await S3Server.with { server in
            let client = try server.client()
            let created = try await client.put("race/replace", body: TestObjects.bytes(1), metadata: [:],
                                               contentType: "application/octet-stream", condition: .create)
            guard case let .stored(original) = created else { Issue.record("create gave \(created)"); return }
            // Host A replaces the version both read; host B, still holding the old ETag, loses.
            let newer = try await client.put("race/replace", body: TestObjects.bytes(2), metadata: [:],
                                             contentType: "application/octet-stream", condition: .replace(etag: original))
            guard case .stored = newer else { Issue.record("replace gave \(newer)"); return }
            let stale = try await client.put("race/replace", body: TestObjects.bytes(3), metadata: [:],
                                             contentType: "application/octet-stream", condition: .replace(etag: original))
            #expect(stale == .preconditionFailed)
            #expect(try await client.get("race/replace")?.body == TestObjects.bytes(2))
        }
    }

    @Test func copyInPlaceReplacesTheMetadataAndKeepsTheBytes() async throws {
        try await S3Server.with { server in
            let client = try server.client()
            let body = TestObjects.bytes(5)
            _ = try await client.put("copy/me", body: body, metadata: ["expires": "100", "etag": "v1"],
                                     contentType: "image/jpeg", condition: .create)
            let before = try #require(try await client.head("copy/me"))
            let outcome = try await client.replaceMetadata(
                "copy/me", metadata: ["expires": "200", "etag": "v1"], bodySHA256: try #require(before.bodySHA256),
                contentType: "image/jpeg", ifMatch: before.etag)
            guard case .stored = outcome else { Issue.record("copy-in-place gave \(outcome)"); return }
            let after = try #require(try await client.get("copy/me"))
            #expect(after.head.metadata["expires"] == "200")
            #expect(after.head.metadata["etag"] == "v1")
            #expect(after.body == body)
        }
    }

    // MARK: - Integrity

    /// An object whose bytes no longer match the checksum in its metadata — as damage on the
    /// server would leave it — is never returned.
    @Test func aBodyChangedUnderneathIsCorruptNeverReturned() async throws {
        try await S3Server.with { server in
            let client = try server.client()
            let original = TestObjects.bytes(7)
            var damaged = original
            damaged[damaged.count / 2] ^= 0x40
            _ = try await client.put("damage/me", body: damaged, metadata: [:], contentType: "image/jpeg",
                                     condition: .create, recordedSHA256: Digest.hex(Digest.sha256(original)))
            let error = await failure { _ = try await client.get("damage/me") }
            guard case .corruptBody(let key, _) = error else { Issue.record("expected corruptBody, got \(String(describing: error))"); return }
            #expect(key == "damage/me")
        }
    }

    // MARK: - Typed errors

    @Test func aWrongSecretIsBadCredentials() async throws {
        try await S3Server.with { server in
            let wrong = S3Credentials(accessKeyID: S3Server.credentials.accessKeyID, secretAccessKey: "not-the-secret")
            let client = try server.client(credentials: wrong)
            await expectBadCredentials { _ = try await client.get("any") }
            await expectBadCredentials {
                _ = try await client.put("any", body: Data([1]), metadata: [:], contentType: "a/b", condition: .create)
            }
            let unknownKey = try server.client(credentials: S3Credentials(accessKeyID: "nobody", secretAccessKey: "x"))
            await expectBadCredentials { _ = try await unknownKey.list(prefix: "") }
        }
    }

    @Test func anUnknownBucketIsTypedAndNamed() async throws {
        try await S3Server.with { server in
            let client = try server.client(bucket: "no-such-bucket")
            let onGet = await failure { _ = try await client.get("any") }
            let onList = await failure { _ = try await client.list(prefix: "") }
            #expect(onGet == .unknownBucket(bucket: "no-such-bucket"))
            #expect(onList == .unknownBucket(bucket: "no-such-bucket"))
            #expect(onGet?.description.contains("no-such-bucket") == true)
        }
    }

    private func expectBadCredentials(_ body: () async throws -> Void) async {
        let error = await failure(of: body)
        guard case .badCredentials = error else { Issue.record("expected badCredentials, got \(String(describing: error))"); return }
        #expect(error?.description.contains("not-the-secret") == false)
    }
}

extension S3ClientServerTests {
    /// An object over `maxResponseBytes` is refused, not read into memory.
    @Test func anObjectOverTheResponseLimitIsRefused() async throws {
        try await S3Server.with { server in
            let writer = try server.client()
            _ = try await writer.put("big/one", body: TestObjects.bytes(1, count: 64 << 10), metadata: [:],
                                     contentType: "application/octet-stream", condition: .create)
            var configuration = server.configuration()
            configuration.maxResponseBytes = 16 << 10
            let reader = try S3Client(configuration: configuration)
            let error = await failure { _ = try await reader.get("big/one") }
            #expect(error == .responseTooLarge(operation: "GET big/one", limit: 16 << 10))
        }
    }
}
