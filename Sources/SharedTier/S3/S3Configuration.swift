import Foundation
import ImageStore

/// Where the tier's bucket is and how to reach it.
public struct S3Configuration: Sendable, CustomStringConvertible {
    /// The server's base URL, `http(s)://host[:port]`, without the bucket.
    public var endpoint: URL
    /// The bucket.
    public var bucket: String
    /// The signing region (`AWS_REGION`; SeaweedFS, MinIO and Ceph accept `us-east-1`).
    public var region: String
    /// The signing credentials (never logged; see `S3Credentials`).
    public var credentials: S3Credentials
    /// Path-style addressing (`endpoint/bucket/key`), the default and what non-AWS servers
    /// expect; false for virtual-hosted style (`bucket.endpoint/key`).
    public var pathStyle: Bool
    /// Time allowed for the response head of a request that sends no body (GET, HEAD, copy,
    /// listing): the connection plus the server's first answer. `URLSession` on Linux has no
    /// separate connect timeout, so this is the bound a frozen or unreachable server hits.
    /// More than 0, at most a year (`ImageStore.Configuration.maxPeriod`).
    public var connectTimeout: Duration
    /// Time allowed for a whole request, body included; more than 0, at most a year.
    public var requestTimeout: Duration
    /// The largest answer body read (default 64 MiB): a larger object is refused with
    /// `responseTooLarge` as soon as its `Content-Length` or its bytes pass the limit.
    public var maxResponseBytes: Int

    /// A configuration for `bucket` at `endpoint`.
    public init(endpoint: URL, bucket: String, region: String = "us-east-1", credentials: S3Credentials,
                pathStyle: Bool = true, connectTimeout: Duration = .milliseconds(200),
                requestTimeout: Duration = .seconds(1), maxResponseBytes: Int = 64 << 20) {
        self.endpoint = endpoint
        self.bucket = bucket
        self.region = region
        self.credentials = credentials
        self.pathStyle = pathStyle
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.maxResponseBytes = maxResponseBytes
    }

    /// A path-style configuration from a bucket URL (`http://127.0.0.1:8333/imgstore`), with
    /// credentials and region from `environment` (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`, default `us-east-1`).
    /// - Throws: `invalidConfiguration` for a URL that is not `http(s)://host[:port]/bucket`;
    ///   `missingCredentials`.
    public init(bucketURL: String,
                environment: [String: String] = ProcessInfo.processInfo.environment) throws(SharedTierError) {
        guard let url = URL(string: bucketURL), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            throw .invalidConfiguration(reason: "'\(bucketURL)' is not an http(s) bucket URL such as http://127.0.0.1:8333/imgstore")
        }
        let parts = url.path.split(separator: "/")
        guard parts.count == 1, url.query == nil else {
            throw .invalidConfiguration(reason: "'\(bucketURL)' must name exactly one bucket in its path, such as http://127.0.0.1:8333/imgstore")
        }
        var base = "\(scheme)://\(host.contains(":") ? "[\(host)]" : host)"
        if let port = url.port { base += ":\(port)" }
        let region = environment["AWS_REGION"].flatMap { $0.isEmpty ? nil : $0 } ?? "us-east-1"
        self.init(endpoint: URL(string: base)!, bucket: String(parts[0]), region: region,
                  credentials: try S3Credentials.fromEnvironment(environment))
    }

    /// Checks the fields a request depends on.
    /// - Throws: `invalidConfiguration` naming the field.
    func validate() throws(SharedTierError) {
        guard let scheme = endpoint.scheme?.lowercased(), scheme == "http" || scheme == "https", endpoint.host != nil else {
            throw .invalidConfiguration(reason: "endpoint \(endpoint) is not an http(s) URL")
        }
        guard !bucket.isEmpty, !bucket.contains("/") else {
            throw .invalidConfiguration(reason: "bucket '\(bucket)' must be one non-empty path segment")
        }
        guard !region.isEmpty else { throw .invalidConfiguration(reason: "region is empty") }
        // Bounded above as well: a timer longer than the clock can hold traps in `Task.sleep`.
        let longest = ImageStore.Configuration.maxPeriod
        for (name, timeout) in [("connectTimeout", connectTimeout), ("requestTimeout", requestTimeout)]
        where !(timeout > .zero && timeout <= longest) {
            throw .invalidConfiguration(reason: "\(name) is \(timeout); it must be more than 0 and at most \(longest) (a year)")
        }
        guard maxResponseBytes > 0 else { throw .invalidConfiguration(reason: "maxResponseBytes must be positive") }
    }

    public var description: String {
        "S3Configuration(endpoint: \(endpoint), bucket: \(bucket), region: \(region), credentials: \(credentials), "
            + "pathStyle: \(pathStyle), connectTimeout: \(connectTimeout), requestTimeout: \(requestTimeout))"
    }
}
