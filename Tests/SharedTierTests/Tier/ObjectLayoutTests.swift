import Foundation
import Testing
@testable import SharedTier

@Suite struct ObjectLayoutTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000.25)

    private func object(for entry: SharedEntry, metadata: [String: String]? = nil, key: String = "k") throws -> S3Object {
        var all = try metadata ?? ObjectLayout.metadata(of: entry)
        all[S3Client.checksumMetadataName] = Digest.hex(Digest.sha256(entry.body))
        return S3Object(head: S3ObjectHead(key: key, etag: "\"e\"", contentLength: entry.body.count,
                                           contentType: "image/jpeg", metadata: all), body: entry.body)
    }

    @Test func theKeyIsTheHexSHA256OfTheURLUnderThePrefix() {
        let key = ObjectLayout.key(for: "https://example.com/a.jpg", prefix: "fleet/")
        #expect(key.hasPrefix("fleet/"))
        #expect(key.dropFirst(6).count == 64)
        #expect(key.dropFirst(6).allSatisfy { "0123456789abcdef".contains($0) })
        #expect(key == "fleet/" + Digest.hex(Digest.sha256(Array("https://example.com/a.jpg".utf8))))
        #expect(ObjectLayout.key(for: "https://example.com/b.jpg", prefix: "fleet/") != key)
    }

    @Test func metadataIsASCIIAndRoundTripsEveryField() throws {
        let entry = SharedEntry(url: "https://exämple.com/ä b.jpg?x=1&y=2", body: Data([1, 2, 3]), format: "png", width: 7,
                                height: 9, originETag: "W/\"ä\"", originLastModified: "Tue, 01 Dec 2026 10:00:00 GMT",
                                expires: Self.now.addingTimeInterval(60), fetched: Self.now)
        let metadata = try ObjectLayout.metadata(of: entry)
        #expect(metadata.values.allSatisfy { $0.allSatisfy(\.isASCII) })
        #expect(metadata["imgstore-expires-ms"] == "1800000060250")
        var back = try ObjectLayout.entry(from: try object(for: entry), url: entry.url)
        #expect(back.objectETag == "\"e\"")
        back.objectETag = nil
        #expect(back == entry)
    }

    @Test func anObjectForAnotherURLOrLayoutOrWithAFieldMissingIsCorrupt() throws {
        let entry = TestObjects.entry("https://example.com/a.jpg", body: Data([1]), now: Self.now)
        var otherLayout = try ObjectLayout.metadata(of: entry)
        otherLayout["imgstore-layout"] = "2"
        var missing = try ObjectLayout.metadata(of: entry)
        missing["imgstore-width"] = nil
        var negative = try ObjectLayout.metadata(of: entry)
        negative["imgstore-height"] = "-1"
        let cases: [(S3Object, String)] = [
            (try object(for: entry), "https://example.com/other.jpg"),
            (try object(for: entry, metadata: otherLayout), entry.url),
            (try object(for: entry, metadata: missing), entry.url),
            (try object(for: entry, metadata: negative), entry.url),
        ]
        for (object, url) in cases {
            #expect(throws: SharedTierError.self) { try ObjectLayout.entry(from: object, url: url) }
        }
    }
}
