import Foundation

/// The access key, secret and optional session token that sign every request.
///
/// Never logged: `description`, `debugDescription` and the mirror (`dump`, `print` of a
/// value that holds one) show the first four characters of the access key and nothing of the
/// secret or the token.
public struct S3Credentials: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible,
    CustomReflectable {
    /// The access key id (`AWS_ACCESS_KEY_ID`).
    public var accessKeyID: String
    /// The secret access key (`AWS_SECRET_ACCESS_KEY`).
    public var secretAccessKey: String
    /// The session token of temporary credentials (`AWS_SESSION_TOKEN`), sent as
    /// `x-amz-security-token`.
    public var sessionToken: String?

    /// Credentials from their parts.
    public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
        self.accessKeyID = accessKeyID
        self.secretAccessKey = secretAccessKey
        self.sessionToken = sessionToken
    }

    /// The credentials in `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and (optionally)
    /// `AWS_SESSION_TOKEN` of `environment` (default: this process's).
    /// - Throws: `SharedTierError.missingCredentials` naming the first variable that is unset
    ///   or empty.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(SharedTierError) -> S3Credentials {
        guard let key = environment["AWS_ACCESS_KEY_ID"], !key.isEmpty else {
            throw .missingCredentials(variable: "AWS_ACCESS_KEY_ID")
        }
        guard let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty else {
            throw .missingCredentials(variable: "AWS_SECRET_ACCESS_KEY")
        }
        let token = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
        return S3Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: token)
    }

    /// The redacted form every description uses.
    public var description: String {
        "S3Credentials(accessKeyID: \(Self.redactedKey(accessKeyID)), secretAccessKey: <redacted>, "
            + "sessionToken: \(sessionToken == nil ? "none" : "<redacted>"))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["redacted": description], displayStyle: .struct)
    }

    /// Enough of an access key to tell two apart in a log, never the whole of it.
    static func redactedKey(_ key: String) -> String {
        key.count <= 4 ? "<redacted>" : "\(key.prefix(4))…"
    }
}
