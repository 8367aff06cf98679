import Foundation
import ImageStoreTestSupport
import SharedTierTestSupport
import Testing

/// How `fetch` and `warm` fail (issue 14 §3, probe14 #6 and #15): each failure is one line on
/// stderr naming its URL, in the tool's terms (its flags, never a Swift type or property), and
/// the exit status is the one the README's table gives for its kind: 65 bad data (malformed URL,
/// not an image, too large), 69 unavailable (unreachable, timed out, 5xx and other refusals),
/// 1 not found (404, 410); with several URLs, the most severe (74 > 69 > 65 > 1).
@Suite struct FetchFailureTests {
    /// Runs `fetch arguments` on a new store, removed afterwards.
    static func fetch(_ arguments: [String]) async throws -> ProcessResult {
        let directory = makeTemporaryDirectory()
        defer { removeDirectory(directory) }
        return try await AsyncProcess.run(AdminBinary.path, ["--store", directory + "/s", "fetch"] + arguments,
                                          environment: ProcessInfo.processInfo.environment)
    }

    /// Removes a test's directory (a store takes 65 MB: none may be left behind).
    static func removeDirectory(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(throws: Never.self, sourceLocation: sourceLocation) { try FileManager.default.removeItem(atPath: path) }
    }

    /// Library names that must never reach a user of the tool.
    static let swiftNames = ["Configuration", "ImageLoader", "ImageStore", "maxEntryBytes", "downloadTimeout",
                             "negativeCacheLifetime", "maxResponseBytes", "readOnly", "salvageDamagedLog"]

    static func expectToolTerms(_ result: ProcessResult, sourceLocation: SourceLocation = #_sourceLocation) {
        for name in swiftNames {
            #expect(!result.standardError.contains(name), "\(result.standardError)", sourceLocation: sourceLocation)
            #expect(!result.output.contains(name), "\(result.output)", sourceLocation: sourceLocation)
        }
    }

    /// `result` failed with `status`, printed nothing on stdout and one line on stderr:
    /// "imgstore-admin fetch: " and `line` (or a line starting so, when `prefix`).
    static func expectFailure(_ result: ProcessResult, _ status: Int32, _ line: String, prefix: Bool = false,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == status, "\(result.standardError)", sourceLocation: sourceLocation)
        #expect(result.output == "", sourceLocation: sourceLocation)
        let expected = "imgstore-admin fetch: " + line
        if prefix {
            #expect(result.standardError.hasPrefix(expected), "\(result.standardError)", sourceLocation: sourceLocation)
            #expect(result.standardError.filter { $0 == "\n" }.count == 1, "\(result.standardError)", sourceLocation: sourceLocation)
        } else {
            #expect(result.standardError == expected + "\n", sourceLocation: sourceLocation)
        }
        expectToolTerms(result, sourceLocation: sourceLocation)
    }

    // MARK: - One URL, one failure

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for the test origin"))
    func aTimeoutNamesTheTimeoutFlagAndExits69() async throws {
        let origin = try TestOrigin()
        // The origin sits on the request far longer than --timeout: the tool gives up first.
        try await origin.script("/slow.png", .init(fixture: "shapes.png", delay: 120))
        let url = origin.url("/slow.png")
        let result = try await Self.fetch(["--timeout", "1", url])
        Self.expectFailure(result, 69, "\(url): the download took longer than --timeout 1 s; the origin is slow or unreachable")
    }

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for the test origin"))
    func aResponseOverTheEntryLimitNamesTheLimitAndExits65() async throws {
        let origin = try TestOrigin()
        try await origin.script("/huge.png", .init(body_size: (64 << 20) + 1))
        let url = origin.url("/huge.png")
        let result = try await Self.fetch([url])
        Self.expectFailure(result, 65, "\(url): the response is 67108865 bytes, over the store's entry size limit of 67108864 bytes; the download was aborted")
    }

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for the test origin"))
    func anImageTheBudgetWouldEvictAtOnceNamesMaxDiskBytesAndExits74() async throws {
        // A put the budget would evict at once is refused as a full disk refuses one (74, as `put` exits).
        let origin = try TestOrigin()
        let url = origin.url("/a/photo-baseline.jpg")  // 7660 bytes: more than a budget of 8000 bytes keeps
        let result = try await Self.fetch(["--max-disk-bytes", "8000", url])
        Self.expectFailure(result, 74, "\(url): The image is 7660 bytes and would take ", prefix: true)
        #expect(result.standardError.contains("(90% of --max-disk-bytes 8000)"), "\(result.standardError)")
        #expect(result.standardError.contains("Nothing was stored or evicted"), "\(result.standardError)")
    }

    static let statuses: [(status: Int, exit: Int32, reason: String)] = [
        (404, 1, "the origin answered 404 (not found)"),
        (410, 1, "the origin answered 410 (gone)"),
        (500, 69, "the origin failed with HTTP 500"),
        (503, 69, "the origin failed with HTTP 503"),
        (403, 69, "the origin refused it with HTTP 403"),
    ]

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for the test origin"), arguments: statuses)
    func anHTTPErrorStatusExitsAsTheTableSays(_ status: Int, _ exit: Int32, _ reason: String) async throws {
        let origin = try TestOrigin()
        try await origin.script("/s.png", .init(status: status))
        let url = origin.url("/s.png")
        let result = try await Self.fetch([url])
        Self.expectFailure(result, exit, "\(url): \(reason)")
    }

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for the test origin"))
    func aResponseThatIsNotAnImageExits65() async throws {
        let origin = try TestOrigin()
        try await origin.script("/text.png", .init(body_size: 100))
        try await origin.script("/empty.png", .init(body_size: 0))
        let text = origin.url("/text.png"), empty = origin.url("/empty.png")
        let result = try await Self.fetch([text])
        Self.expectFailure(result, 65, "\(text): the response is not a valid image: ", prefix: true)
        let none = try await Self.fetch([empty])
        Self.expectFailure(none, 65, "\(empty): the origin answered with an empty body, which is not an image")
    }

    @Test func aMalformedURLExits65AndSaysWhyOnce() async throws {
        let result = try await Self.fetch(["http://127.0.0.1:9/a b.png"])
        Self.expectFailure(result, 65, "http://127.0.0.1:9/a b.png: malformed URL: it contains a space or control character at byte 20")
        let ftp = try await Self.fetch(["ftp://127.0.0.1:9/a.png"])
        Self.expectFailure(ftp, 65, "ftp://127.0.0.1:9/a.png: not an http or https URL: the scheme \"ftp\" is not http or https")
        let empty = try await Self.fetch([""])
        Self.expectFailure(empty, 65, "\"\": malformed URL: it is empty")
    }

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for the test origin"))
    func anUnreachableOriginExits69() async throws {
        let origin = try TestOrigin()
        let url = origin.url("/a/shapes.png")
        origin.stop()  // nothing listens on its port any more
        let result = try await Self.fetch([url])
        Self.expectFailure(result, 69, "\(url): the origin could not be reached (connection refused); check the network and the host")
    }

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for the test origin"))
    func aBodyCutShortExits69() async throws {
        let origin = try TestOrigin()
        // Content-Length says 167 bytes (shapes.png); 50 arrive, then the connection closes.
        try await origin.script("/cut.png", .init(fixture: "shapes.png", truncate: 50))
        let url = origin.url("/cut.png")
        let result = try await Self.fetch([url])
        Self.expectFailure(result, 69, "\(url): the response was cut short or padded: Content-Length said 167 bytes, 50 arrived")
    }

    // MARK: - Several URLs

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for the test origin"))
    func severalURLsPrintSuccessesOnStdoutAndEachFailureOnStderrAndExitWithTheMostSevere() async throws {
        let origin = try TestOrigin()
        try await origin.script("/text.png", .init(body_size: 100))
        let good = origin.url("/a/shapes.png"), missing = origin.url("/a/nosuch.png"), text = origin.url("/text.png")
        let control = "http://127.0.0.1:9/a\nb.png"
        let result = try await Self.fetch([missing, good, control, text])
        #expect(result.status == 65, "a bad URL and a non-image (65) are more severe than a 404 (1)")
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines[0].hasPrefix("network ") && lines[0].hasSuffix(" " + good) && lines[1] == "", "\(result.output)")
        let errors = result.standardError.split(separator: "\n").map(String.init)
        #expect(errors.count == 3, "\(result.standardError)")
        #expect(errors.first == "imgstore-admin fetch: \(missing): the origin answered 404 (not found)")
        #expect(errors.dropFirst().first == "imgstore-admin fetch: http://127.0.0.1:9/a\\nb.png: malformed URL: it contains a space or control character at byte 20")
        #expect(errors.last?.hasPrefix("imgstore-admin fetch: \(text): the response is not a valid image: ") == true)

        // An unreachable origin (69) outranks them all; a 404 alone is 1.
        let down = try await Self.fetch([missing, text, "http://127.0.0.1:1/a.png", good])
        #expect(down.status == 69, "\(down.standardError)")
        #expect(down.standardError.split(separator: "\n").count == 3, "\(down.standardError)")
        let notFound = try await Self.fetch([good, missing])
        #expect(notFound.status == 1)
        #expect(notFound.standardError == "imgstore-admin fetch: \(missing): the origin answered 404 (not found)\n")
    }

    // MARK: - warm

    @Test func warmTimingOutNamesTheTierTimeoutFlagAndExits69() async throws {
        let stall = try StallingListener()
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_ACCESS_KEY_ID"] = "test"
        environment["AWS_SECRET_ACCESS_KEY"] = "test"
        let directory = makeTemporaryDirectory()
        defer { Self.removeDirectory(directory) }
        let store = directory + "/s"
        let result = try await AsyncProcess.run(AdminBinary.path, [
            "--store", store, "warm", "--shared-tier", "http://127.0.0.1:\(stall.port)/bucket", "--tier-timeout", "1",
        ], environment: environment)
        #expect(result.status == 69)
        #expect(result.output == "")
        #expect(result.standardError.hasPrefix("imgstore-admin warm: the shared tier did not answer "), "\(result.standardError)")
        #expect(result.standardError.hasSuffix(" within --tier-timeout 1 s\n"), "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: store), "a tier that cannot be reached creates no store")
        Self.expectToolTerms(result)
    }

    @Test(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(10)))
    func warmFailsAnObjectTheBudgetWouldEvictAtOnceNamingMaxDiskBytes() async throws {
        try await S3Server.with { server in
            let tier = try SharedTierCommandTests.tier(server)
            let url = "https://cdn.test/photo.jpg"  // 7660 bytes: more than a budget of 8000 bytes keeps
            let entry = try SharedTierCommandTests.entry(url, "photo-baseline.jpg", format: "jpeg", width: 160, height: 120,
                                                         expires: Date().addingTimeInterval(3600))
            #expect(await tier.upload(entry) == .stored)
            let bucket = SharedTierCommandTests.bucketURL(server)
            let directory = makeTemporaryDirectory()
            defer { Self.removeDirectory(directory) }
            let warm = try await SharedTierCommandTests.admin(["--store", directory + "/s", "warm",
                                                               "--shared-tier", bucket, "--max-disk-bytes", "8000"])
            #expect(warm.status == 74, "\(warm.standardError)")
            #expect(warm.output == "warmed 0 of 1 objects from \(bucket) (0 expired, 0 corrupt, 0 invalid, 0 gone, 1 failed)\n")
            let lines = warm.standardError.split(separator: "\n").map(String.init)
            #expect(lines.last?.hasPrefix("imgstore-admin warm: The image is 7660 bytes and would take ") == true, "\(warm.standardError)")
            #expect(lines.last?.contains("(90% of --max-disk-bytes 8000)") == true, "\(warm.standardError)")
            Self.expectToolTerms(warm)
        }
    }
}

/// A TCP socket on 127.0.0.1 that listens and never accepts: connections complete in the
/// kernel's backlog and requests are never answered (an origin or tier that hangs).
final class StallingListener {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw AdminTestError(message: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 64) == 0
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw AdminTestError(message: "cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }
}
