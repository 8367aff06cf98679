import Foundation
import ImageStoreTestSupport
import SharedTierTestSupport
import Testing

/// `--shared-tier URL`: a bad URL, missing credentials, credentials refused, no such bucket and
/// an unreachable tier are each one line on stderr with their exit status, and no message
/// shows a secret.
@Suite struct SharedTierOptionTests {
    static let secret = "do-not-print-this-secret"

    static func run(_ arguments: [String], key: String? = S3Server.credentials.accessKeyID,
                    secret: String? = SharedTierOptionTests.secret) async throws -> ProcessResult {
        var environment = SharedTierCommandTests.environment()
        environment["AWS_ACCESS_KEY_ID"] = key
        environment["AWS_SECRET_ACCESS_KEY"] = secret
        // A token only beside the fake secret (with one, SeaweedFS looks the key up as a temporary one).
        environment["AWS_SESSION_TOKEN"] = secret == Self.secret ? secret! + "-token" : nil
        return try await SharedTierCommandTests.admin(arguments, environment: environment)
    }

    static func expectOneLine(_ result: ProcessResult, status: Int32, _ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == status, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.output == "", sourceLocation: sourceLocation)
        #expect(result.standardError.split(separator: "\n").count == 1, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.standardError.contains(text), "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(!result.standardError.contains(secret), sourceLocation: sourceLocation)
    }

    @Test(arguments: ["ftp://127.0.0.1/imgstore", "http://127.0.0.1:8333", "http://127.0.0.1:8333/a/b", "not a url"])
    func aBadURLIsAUsageError(_ url: String) async throws {
        let store = makeTemporaryDirectory() + "/store"
        let result = try await Self.run(["--store", store, "warm", "--shared-tier", url])
        Self.expectOneLine(result, status: 64, "imgstore-admin warm: --shared-tier: the shared tier's configuration is invalid")
        #expect(!FileManager.default.fileExists(atPath: store), "nothing is created on a usage error")
    }

    @Test func aMissingCredentialIsAUsageErrorNamingTheVariable() async throws {
        let store = makeTemporaryDirectory() + "/store"
        let noKey = try await Self.run(["--store", store, "warm", "--shared-tier", "http://127.0.0.1:1/imgstore"], key: nil)
        Self.expectOneLine(noKey, status: 64, "no credentials for the shared tier: AWS_ACCESS_KEY_ID is not set")
        let noSecret = try await Self.run(["--store", store, "export", "--to-shared-tier", "http://127.0.0.1:1/imgstore"], secret: nil)
        Self.expectOneLine(noSecret, status: 64, "imgstore-admin export: --to-shared-tier: no credentials for the shared tier: AWS_SECRET_ACCESS_KEY is not set")
    }

    @Test func warmWithoutTheTierIsAUsageError() async throws {
        let result = try await Self.run(["--store", makeTemporaryDirectory() + "/store", "warm"])
        Self.expectOneLine(result, status: 64, "imgstore-admin warm: warm needs --shared-tier URL")
    }

    @Test func anUnreachableTierIs69AndCreatesNoStore() async throws {
        // Port 1 on loopback: nothing listens, the connection is refused at once.
        let store = makeTemporaryDirectory() + "/store"
        let result = try await Self.run(["--store", store, "warm", "--shared-tier", "http://127.0.0.1:1/imgstore"])
        Self.expectOneLine(result, status: 69, "imgstore-admin warm: the shared tier could not be reached for ListObjectsV2 imgstore/")
        #expect(!FileManager.default.fileExists(atPath: store))
    }

    @Test(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(10)))
    func refusedCredentialsAre77AndAnUnknownBucket69() async throws {
        try await S3Server.with { server in
            let store = makeTemporaryDirectory() + "/store"
            try AdminBinary.makeDemoStore(store)
            let url = SharedTierCommandTests.bucketURL(server)
            // The server's access key with another secret: the signature does not match.
            let wrongSecret = try await Self.run(["--store", store, "warm", "--shared-tier", url])
            Self.expectOneLine(wrongSecret, status: 77, "imgstore-admin warm: the shared tier refused the credentials")
            let unknownKey = try await Self.run(["--store", store, "export", "--to-shared-tier", url], key: "no-such-key")
            #expect(unknownKey.standardError.contains("the shared tier refused the credentials"))
            #expect(!unknownKey.standardError.contains(Self.secret))
            #expect(unknownKey.status == 77)
            let right = S3Server.credentials
            let noBucket = try await Self.run(["--store", store, "stats", "--shared-tier", "\(server.endpoint.absoluteString)/no-such-bucket"],
                                              key: right.accessKeyID, secret: right.secretAccessKey)
            #expect(noBucket.status == 69, "\(noBucket.standardError)")
            #expect(noBucket.standardError == "imgstore-admin stats: the shared tier has no bucket 'no-such-bucket'; create it or fix the bucket in the tier's URL\n")
            #expect(noBucket.output == "")
        }
    }
}
