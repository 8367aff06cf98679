import Foundation
import Testing
@testable import SharedTier

/// Credentials come from the standard variables or the configuration, and no description
/// of anything that holds them shows the secret or the token.
@Suite struct CredentialsTests {
    static let secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
    static let token = "FQoGZXIvYXdzEXAMPLETOKEN"
    static let environment = [
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": token,
        "AWS_REGION": "eu-west-3",
    ]

    @Test func credentialsAndRegionComeFromTheStandardVariables() throws {
        let configuration = try S3Configuration(bucketURL: "http://127.0.0.1:8333/imgstore", environment: Self.environment)
        #expect(configuration.credentials == S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: Self.secret,
                                                           sessionToken: Self.token))
        #expect(configuration.region == "eu-west-3")
        #expect(configuration.bucket == "imgstore")
        #expect(configuration.endpoint.absoluteString == "http://127.0.0.1:8333")
        #expect(configuration.pathStyle)
        #expect(configuration.connectTimeout == .milliseconds(200))
        #expect(configuration.requestTimeout == .seconds(1))
    }

    @Test(arguments: ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"])
    func aMissingVariableIsNamed(_ variable: String) {
        var environment = Self.environment
        environment[variable] = ""
        #expect(throws: SharedTierError.missingCredentials(variable: variable)) {
            try S3Configuration(bucketURL: "http://127.0.0.1:8333/imgstore", environment: environment)
        }
    }

    @Test(arguments: ["ftp://127.0.0.1/b", "http://127.0.0.1:8333", "http://127.0.0.1:8333/a/b", "not a url", "http:///b"])
    func aBadBucketURLIsRejectedWithAReason(_ url: String) {
        #expect(throws: SharedTierError.self) { try S3Configuration(bucketURL: url, environment: Self.environment) }
    }

    @Test func noDescriptionRevealsTheSecretOrTheToken() throws {
        let configuration = try S3Configuration(bucketURL: "http://127.0.0.1:8333/imgstore", environment: Self.environment)
        let signer = SigV4Signer(credentials: configuration.credentials, region: "us-east-1")
        let signed = signer.sign(.init(method: "GET", path: "/", headers: [("Host", "h")], payloadHash: SigV4Signer.emptyPayloadHash),
                                 at: Date(timeIntervalSince1970: 0))
        var dumped = ""
        dump(configuration, to: &dumped)
        var dumpedCredentials = ""
        dump(configuration.credentials, to: &dumpedCredentials)
        let texts = [
            "\(configuration.credentials)", String(reflecting: configuration.credentials), "\(configuration)",
            String(reflecting: configuration), dumped, dumpedCredentials, signed.authorization,
            "\(SharedTierError.badCredentials(code: "SignatureDoesNotMatch", message: "m"))",
        ]
        for text in texts {
            #expect(!text.contains(Self.secret), "\(text)")
            #expect(!text.contains(Self.token), "\(text)")
            #expect(!text.contains("AKIDEXAMPLE") || text == signed.authorization, "\(text)")
        }
        #expect("\(configuration.credentials)".contains("AKID…"))
    }
}
