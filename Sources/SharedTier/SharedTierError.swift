/// What can go wrong talking to the shared tier. `SharedTier.lookup` turns every one of them
/// into a miss (and counts it); `S3Client` throws them.
///
/// None of the descriptions contains a secret: credentials appear only redacted.
public enum SharedTierError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server refused the signature or the access key (403 `InvalidAccessKeyId`,
    /// `SignatureDoesNotMatch`, `AccessDenied`, …).
    case badCredentials(code: String, message: String)
    /// The bucket does not exist on the server (404 `NoSuchBucket`).
    case unknownBucket(bucket: String)
    /// No answer within the configured timeout (`connectTimeout` or `requestTimeout`).
    case timedOut(operation: String, milliseconds: Int)
    /// The connection failed (refused, reset, no route): the server is down or unreachable.
    case unreachable(operation: String, reason: String)
    /// The body that arrived is not the object that was stored: a length that differs from
    /// `Content-Length`, or bytes whose SHA-256 differs from the checksum in its metadata.
    case corruptBody(key: String, reason: String)
    /// The answer's body is larger than `S3Configuration.maxResponseBytes`; it was not read.
    case responseTooLarge(operation: String, limit: Int)
    /// The server failed (a 5xx answer).
    case serverError(status: Int, code: String, message: String)
    /// Any other answer the operation does not expect (a 4xx other than the ones above).
    case unexpectedStatus(operation: String, status: Int, code: String, message: String)
    /// An answer that could not be understood (a listing that is not valid XML, …).
    case invalidResponse(operation: String, reason: String)
    /// The configuration cannot work (an endpoint that is not http(s), an empty bucket, …).
    case invalidConfiguration(reason: String)
    /// A credential variable is unset or empty.
    case missingCredentials(variable: String)
    /// An entry the tier cannot write (a date its object's metadata cannot hold); nothing was sent.
    case invalidEntry(url: String, reason: String)
    /// The calling task was cancelled.
    case cancelled

    public var description: String {
        switch self {
        case let .badCredentials(code, message):
            return "the shared tier refused the credentials (\(code): \(message)); check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        case let .unknownBucket(bucket):
            return "the shared tier has no bucket '\(bucket)'; create it or fix the bucket in the tier's URL"
        case let .timedOut(operation, milliseconds):
            return "the shared tier did not answer \(operation) within \(milliseconds) ms"
        case let .unreachable(operation, reason):
            return "the shared tier could not be reached for \(operation): \(reason)"
        case let .corruptBody(key, reason):
            return "the shared tier's object \(key) is corrupt: \(reason); it was not used"
        case let .responseTooLarge(operation, limit):
            return "the shared tier's answer to \(operation) is larger than the \(limit)-byte limit (maxResponseBytes); it was not read"
        case let .serverError(status, code, message):
            return "the shared tier failed with HTTP \(status)\(Self.detail(code, message))"
        case let .unexpectedStatus(operation, status, code, message):
            return "the shared tier answered \(operation) with HTTP \(status)\(Self.detail(code, message))"
        case let .invalidResponse(operation, reason):
            return "the shared tier's answer to \(operation) could not be read: \(reason)"
        case let .invalidConfiguration(reason):
            return "the shared tier's configuration is invalid: \(reason)"
        case let .missingCredentials(variable):
            return "no credentials for the shared tier: \(variable) is not set"
        case let .invalidEntry(url, reason):
            return "the entry for \(url) cannot be written to the shared tier: \(reason)"
        case .cancelled:
            return "the shared tier request was cancelled"
        }
    }

    /// Whether the error says the tier is unavailable (down, slow, refusing us), so it counts
    /// towards the circuit breaker. A corrupt body or an unexpected answer to one request
    /// does not: the server is up and answering.
    public var isOutage: Bool {
        switch self {
        case .timedOut, .unreachable, .serverError, .badCredentials, .unknownBucket: return true
        default: return false
        }
    }

    private static func detail(_ code: String, _ message: String) -> String {
        switch (code.isEmpty, message.isEmpty) {
        case (true, true): return ""
        case (false, true): return " (\(code))"
        case (true, false): return ": \(message)"
        case (false, false): return " (\(code)): \(message)"
        }
    }
}

extension SharedTierError {
    /// A short stable name of the case, for metrics (`timedOut`, `unreachable`, …).
    public var kind: String {
        switch self {
        case .badCredentials: return "badCredentials"
        case .unknownBucket: return "unknownBucket"
        case .timedOut: return "timedOut"
        case .unreachable: return "unreachable"
        case .corruptBody: return "corruptBody"
        case .responseTooLarge: return "responseTooLarge"
        case .serverError: return "serverError"
        case .unexpectedStatus: return "unexpectedStatus"
        case .invalidResponse: return "invalidResponse"
        case .invalidConfiguration: return "invalidConfiguration"
        case .missingCredentials: return "missingCredentials"
        case .invalidEntry: return "invalidEntry"
        case .cancelled: return "cancelled"
        }
    }
}
