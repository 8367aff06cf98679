import Foundation
import ImageStore
import ImageStoreTestSupport
import SharedTier
import SharedTierTestSupport
import Testing

/// `warm --shared-tier`, `export --to-shared-tier` and `stats --shared-tier`, run as the built
/// binary (the release build in CI) against a real SeaweedFS per test. The time limit is a
/// safety net, generous because a test may wait for one of the process's 3 server slots behind
/// SharedTierTests' servers in a full `swift test`.
@Suite(.enabled(if: S3Server.available, S3Server.unavailableReason), .timeLimit(.minutes(10)))
struct SharedTierCommandTests {
    /// The tool's environment for `server`'s bucket: its credentials, nothing else of ours.
    static func environment(secret: String = S3Server.credentials.secretAccessKey) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_ACCESS_KEY_ID"] = S3Server.credentials.accessKeyID
        environment["AWS_SECRET_ACCESS_KEY"] = secret
        environment.removeValue(forKey: "AWS_SESSION_TOKEN")
        environment.removeValue(forKey: "AWS_REGION")
        return environment
    }

    /// Runs the tool without blocking a Swift concurrency thread.
    static func admin(_ arguments: [String], environment: [String: String] = environment()) async throws -> ProcessResult {
        try await AsyncProcess.run(AdminBinary.path, arguments, environment: environment)
    }

    static func bucketURL(_ server: S3Server) -> String { "\(server.endpoint.absoluteString)/\(S3Server.bucket)" }

    /// A tier on `server` with `prefix`, as a service host would upload through it.
    static func tier(_ server: S3Server, prefix: String = "imgstore/") throws -> SharedTier {
        try SharedTier(configuration: .init(s3: server.configuration(), prefix: prefix))
    }

    static func entry(_ url: String, _ fixture: String, format: String, width: Int, height: Int,
                      expires: Date, etag: String? = nil) throws -> SharedEntry {
        SharedEntry(url: url, body: try Fixtures.image(fixture), format: format, width: width, height: height,
                    originETag: etag, originLastModified: etag.map { _ in "Tue, 01 Dec 2026 10:00:00 GMT" },
                    expires: expires, fetched: Date(timeIntervalSince1970: 1_780_000_000))
    }

    /// Whether two expiries agree to the millisecond the object layout carries: the tier keeps
    /// whole milliseconds (rounded down), and the store's expiry arithmetic (a TTL from its
    /// clock's now) may round that down by one more.
    static func sameMillisecond(_ a: Date, _ b: Date) -> Bool { abs(a.timeIntervalSince(b)) <= 0.002 }

    static func openReadOnly(_ path: String) throws -> ImageStore {
        var configuration = ImageStore.Configuration()
        configuration.readOnly = true
        configuration.sweepPeriod = nil
        return try ImageStore(path: path, configuration: configuration)
    }

    // MARK: - warm

    @Test func warmStoresEveryObjectWithItsAbsoluteExpiryAndOriginValidators() async throws {
        try await S3Server.with { server in
            // A prefix whose listing query needs encoding (space, non-ASCII, reserved characters).
            let prefix = "fleet one/ü+=&?/"
            let tier = try Self.tier(server, prefix: prefix)
            let expires = Date().addingTimeInterval(3 * 3600)
            let entries = [
                try Self.entry("https://cdn.test/a%20photo.jpg", "photo-baseline.jpg", format: "jpeg", width: 160, height: 120,
                               expires: expires, etag: "\"origin-v1\""),
                try Self.entry("https://cdn.test/shapes.png?w=100&h=30", "shapes.png", format: "png", width: 100, height: 30,
                               expires: expires.addingTimeInterval(60)),
                try Self.entry("https://cdn.test/progressive.jpg", "photo-progressive.jpg", format: "jpeg", width: 160, height: 120,
                               expires: expires, etag: "W/\"weak\""),
            ]
            for entry in entries { #expect(await tier.upload(entry) == .stored) }
            // Another fleet's object under another prefix is not warmed.
            #expect(try await Self.tier(server, prefix: "other/").upload(entries[0]) == .stored)

            let store = makeTemporaryDirectory() + "/store"
            let warm = try await Self.admin(["--store", store, "warm", "--shared-tier", Self.bucketURL(server), "--prefix", prefix,
                                             "--concurrency", "2"])
            #expect(warm.status == 0, "\(warm.standardError)")
            #expect(warm.output == "warmed 3 of 3 objects from \(Self.bucketURL(server)) (0 expired, 0 corrupt, 0 invalid, 0 gone, 0 failed)\n")
            #expect(warm.standardError == "")

            let warmed = try Self.openReadOnly(store)
            defer { warmed.close() }
            #expect(try warmed.entries().count == 3)
            for entry in entries {
                let image = try #require(try warmed.image(for: entry.url), "\(entry.url) was not warmed")
                #expect(image.data == entry.body)
                #expect(image.info.validators == CacheValidators(etag: entry.originETag, lastModified: entry.originLastModified))
                let stored = try #require(image.info.expiresAt)
                #expect(Self.sameMillisecond(stored, entry.expires), "the expiry is absolute, not a new TTL: \(stored) vs \(entry.expires)")
            }
        }
    }

    @Test func warmStopsAtTheLimitInKeyOrder() async throws {
        try await S3Server.with { server in
            let tier = try Self.tier(server)
            let expires = Date().addingTimeInterval(3600)
            var keys: [String: String] = [:]
            for n in 0..<5 {
                let url = "https://cdn.test/\(n).png"
                keys[tier.key(for: url)] = url
                #expect(await tier.upload(try Self.entry(url, "shapes.png", format: "png", width: 100, height: 30, expires: expires)) == .stored)
            }
            let store = makeTemporaryDirectory() + "/store"
            let warm = try await Self.admin(["--store", store, "warm", "--shared-tier", Self.bucketURL(server), "--limit", "2"])
            #expect(warm.status == 0, "\(warm.standardError)")
            #expect(warm.output.hasPrefix("warmed 2 of 2 objects"))
            let warmed = try Self.openReadOnly(store)
            defer { warmed.close() }
            let expected = Set(keys.keys.sorted().prefix(2).map { keys[$0]! })
            #expect(Set(try warmed.entries().map(\.url)) == expected)
        }
    }

    @Test func aCorruptInvalidOrExpiredObjectIsSkippedAndCountedNeverStored() async throws {
        try await S3Server.with { server in
            let tier = try Self.tier(server)
            let client = try server.client()
            let now = Date()
            let good = try Self.entry("https://cdn.test/good.png", "shapes.png", format: "png", width: 100, height: 30,
                                      expires: now.addingTimeInterval(3600))
            #expect(await tier.upload(good) == .stored)
            let expired = try Self.entry("https://cdn.test/expired.png", "shapes.png", format: "png", width: 100, height: 30,
                                         expires: now.addingTimeInterval(-60))
            #expect(await tier.upload(expired) == .stored)
            // The bytes are not an image.
            var notImage = good
            notImage.url = "https://cdn.test/not-an-image.png"
            notImage.body = Data("this is not a png".utf8)
            #expect(await tier.upload(notImage) == .stored)
            // A valid PNG whose metadata says it is a 64x48 JPEG.
            var mislabelled = good
            mislabelled.url = "https://cdn.test/mislabelled.jpg"
            mislabelled.format = "jpeg"
            mislabelled.width = 64
            mislabelled.height = 48
            #expect(await tier.upload(mislabelled) == .stored)
            // Bytes that differ from the checksum recorded with them: changed underneath.
            let corruptURL = "https://cdn.test/corrupt.png"
            var corrupt = good
            corrupt.url = corruptURL
            let damaged = Data(corrupt.body.reversed())
            _ = try await client.put(tier.key(for: corruptURL), body: damaged, metadata: try ObjectLayout.metadata(of: corrupt),
                                     contentType: "image/png", condition: .create,
                                     recordedSHA256: Digest.hex(Digest.sha256(corrupt.body)))
            // An object stored under a key that is not its URL's hash.
            _ = try await client.put("imgstore/" + String(repeating: "0", count: 64), body: good.body,
                                     metadata: try ObjectLayout.metadata(of: good), contentType: "image/png", condition: .create)

            let store = makeTemporaryDirectory() + "/store"
            let warm = try await Self.admin(["--store", store, "warm", "--shared-tier", Self.bucketURL(server)])
            #expect(warm.status == 65, "\(warm.standardError)")
            #expect(warm.output == "warmed 1 of 6 objects from \(Self.bucketURL(server)) (1 expired, 2 corrupt, 2 invalid, 0 gone, 0 failed)\n")
            let lines = warm.standardError.split(separator: "\n")
            #expect(lines.filter { $0.hasPrefix("imgstore-admin warm: skipped: ") }.count == 4, "\(warm.standardError)")
            #expect(lines.last == "imgstore-admin warm: 4 objects skipped as corrupt or invalid")
            #expect(warm.standardError.contains("not-an-image.png is not a valid image"))
            #expect(warm.standardError.contains("mislabelled.jpg is png 100x30, its metadata says jpeg 64x48"))
            let warmed = try Self.openReadOnly(store)
            defer { warmed.close() }
            #expect(try warmed.entries().map(\.url) == ["https://cdn.test/good.png"])
        }
    }

    // MARK: - export

    @Test func exportPushesEveryLiveEntryAndSkipsTheOnesAlreadyThere() async throws {
        try await S3Server.with { server in
            let source = makeTemporaryDirectory() + "/store"
            try AdminBinary.makeDemoStore(source)
            // One entry another host uploaded already: the export must not replace it.
            let tier = try Self.tier(server)
            let demoURL = "https://demo.imgstore.invalid/fixtures/shapes.png"
            let theirs = try Self.entry(demoURL, "shapes.png", format: "png", width: 100, height: 30,
                                        expires: Date().addingTimeInterval(60), etag: "\"theirs\"")
            #expect(await tier.upload(theirs) == .stored)

            let url = Self.bucketURL(server)
            let first = try await Self.admin(["--store", source, "export", "--to-shared-tier", url])
            #expect(first.status == 0, "\(first.standardError)")
            #expect(first.output == "exported 6 of 7 entries to \(url) (1 already there, 0 expired or removed, 0 too large, 0 failed)\n")
            let again = try await Self.admin(["--store", source, "export", "--to-shared-tier", url])
            #expect(again.status == 0, "\(again.standardError)")
            #expect(again.output == "exported 0 of 7 entries to \(url) (7 already there, 0 expired or removed, 0 too large, 0 failed)\n")
            guard case let .hit(kept) = await tier.lookup(demoURL) else { Issue.record("the other host's entry is gone"); return }
            #expect(kept.originETag == "\"theirs\"")

            // What was exported is what the loader's layout holds: it warms a new store byte for byte.
            let copy = makeTemporaryDirectory() + "/store"
            let warm = try await Self.admin(["--store", copy, "warm", "--shared-tier", url])
            #expect(warm.status == 0, "\(warm.standardError)")
            let original = try Self.openReadOnly(source), warmed = try Self.openReadOnly(copy)
            defer { original.close(); warmed.close() }
            for info in try original.entries() where info.url != demoURL {
                let image = try #require(try warmed.image(for: info.url))
                #expect(image.data == (try original.image(for: info.url))?.data)
                #expect(Self.sameMillisecond(try #require(image.info.expiresAt), try #require(info.expiresAt)))
            }
        }
    }

    @Test func exportTakesDIROrTheTierNotBoth() async throws {
        let store = makeTemporaryDirectory() + "/store"
        try AdminBinary.makeDemoStore(store)
        let both = try await Self.admin(["--store", store, "export", "--to-shared-tier", "http://127.0.0.1:1/b", makeTemporaryDirectory()])
        #expect(both.status == 64)
        #expect(both.standardError == "imgstore-admin export: export takes DIR or --to-shared-tier URL, not both (see imgstore-admin --help)\n")
        let neither = try await Self.admin(["--store", store, "export"])
        #expect(neither.status == 64)
        #expect(neither.standardError == "imgstore-admin export: 'export' expects DIR, got 0 argument(s) (see imgstore-admin --help)\n")
    }

    // MARK: - fetch

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for a local origin"))
    func fetchThroughTheTierReachesTheOriginOnceForTwoHosts() async throws {
        try await S3Server.with { server in
            let origin = try LatencyOrigin()
            let urls = [origin.base + "a/shapes.png", origin.base + "b/photo-baseline.jpg", origin.base + "c/gray-alpha.png"]
            let tier = Self.bucketURL(server)
            let first = try await Self.admin(["--store", makeTemporaryDirectory() + "/store", "fetch", "--shared-tier", tier] + urls)
            #expect(first.status == 0, "\(first.standardError)")
            #expect(first.output.split(separator: "\n").allSatisfy { $0.hasPrefix("network ") }, "\(first.output)")
            #expect(try await origin.requests() == 3)
            // The first host's downloads were uploaded before it exited: the second host's loads are shared hits.
            let secondStore = makeTemporaryDirectory() + "/store"
            let second = try await Self.admin(["--store", secondStore, "fetch", "--shared-tier", tier] + urls)
            #expect(second.status == 0, "\(second.standardError)")
            let lines = second.output.split(separator: "\n")
            #expect(lines.count == 3 && lines.allSatisfy { $0.hasPrefix("shared ") }, "\(second.output)")
            #expect(try await origin.requests() == 3, "every URL reached the origin once for both hosts")
            #expect(first.standardError == "imgstore-admin fetch: shared tier: 0 hits, 3 absent, 0 skipped by the breaker, 3 stored, 0 lost races (412), 0 errors\n")
            #expect(second.standardError == "imgstore-admin fetch: shared tier: 3 hits, 0 absent, 0 skipped by the breaker, 0 stored, 0 lost races (412), 0 errors\n")
            let warmed = try Self.openReadOnly(secondStore)
            defer { warmed.close() }
            #expect(try warmed.image(for: urls[1])?.data == (try Fixtures.image("photo-baseline.jpg")))
        }
    }

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for a local origin"))
    func fetchWithAnUnreachableTierLoadsFromTheOrigin() async throws {
        let origin = try LatencyOrigin()
        let url = origin.base + "a/shapes.png"
        let result = try await Self.admin(["--store", makeTemporaryDirectory() + "/store", "fetch", "--shared-tier",
                                           "http://127.0.0.1:1/imgstore", url])
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.output.hasPrefix("network "), "\(result.output)")
        #expect(try await origin.requests() == 1)
        // The lookup and the upload of the download both failed to connect.
        #expect(result.standardError == "imgstore-admin fetch: shared tier: 0 hits, 0 absent, 0 skipped by the breaker, 0 stored, 0 lost races (412), 2 errors (unreachable 2)\n",
                "\(result.standardError)")
    }

    // MARK: - stats

    /// A demo store (the 7 sample images) exported to `server`'s tier: its path and the tier's URL.
    static func exportedDemoStore(_ server: S3Server) async throws -> (store: String, url: String) {
        let store = makeTemporaryDirectory() + "/store"
        try AdminBinary.makeDemoStore(store)
        let url = bucketURL(server)
        let export = try await admin(["--store", store, "export", "--to-shared-tier", url])
        guard export.status == 0 else { throw AdminTestError(message: "export --to-shared-tier failed: \(export.standardError)") }
        return (store, url)
    }

    @Test func statsReportsTheTiersObjectsAndBytes() async throws {
        try await S3Server.with { server in
            let (store, url) = try await Self.exportedDemoStore(server)
            let bytes = try Fixtures.images().reduce(0) { $0 + $1.data.count }

            let text = try await Self.admin(["--store", store, "stats", "--shared-tier", url])
            #expect(text.status == 0, "\(text.standardError)")
            #expect(text.output.hasSuffix("shared tier:   \(url) prefix imgstore/: 7 objects, \(bytes) bytes\n"))
            let json = try await Self.admin(["--store", store, "stats", "--json", "--shared-tier", url])
            let object = try #require(try JSONSerialization.jsonObject(with: json.standardOutput) as? [String: Any])
            let tier = try #require(object["sharedTier"] as? [String: Any])
            #expect(tier["objects"] as? Int == 7 && tier["bytes"] as? Int == bytes && tier["url"] as? String == url)
            // Without --shared-tier the key is there, null (keys are fixed: JSONShapeTests).
            let plain = try await Self.admin(["--store", store, "stats", "--json"])
            let plainObject = try #require(try JSONSerialization.jsonObject(with: plain.standardOutput) as? [String: Any])
            #expect(plainObject["sharedTier"] is NSNull, "\(plain.output)")
        }
    }

    @Test(.enabled(if: Tools.find("promtool") != nil, "needs promtool on PATH (Debian package prometheus, Tools/install-deps.sh)"))
    func statsPrometheusWithTheTierPassesPromtool() async throws {
        try await S3Server.with { server in
            let (store, url) = try await Self.exportedDemoStore(server)
            let prometheus = try await Self.admin(["--store", store, "stats", "--prometheus", "--shared-tier", url])
            #expect(prometheus.status == 0, "\(prometheus.standardError)")
            #expect(prometheus.output.contains("imgstore_shared_tier_objects{prefix=\"imgstore/\",tier=\"\(url)\"} 7\n"))
            #expect(prometheus.output.contains("imgstore_entries{store=\"\(store)\"} 7\n"))
            let check = try ChildProcess.run(Tools.find("promtool")!, ["check", "metrics"], input: prometheus.standardOutput)
            #expect(check.status == 0, "promtool: \(check.standardError) \(check.output)")
        }
    }
}
