import Foundation
@testable import ImageStore
import ImageStoreTestSupport
import Testing

@Suite struct URLKeyTests {
    // MARK: - Normalisation

    @Test(arguments: [
        ("https://CDN.example.com/a.png", "https://cdn.example.com/a.png"),
        ("HTTP://example.com:80/a", "http://example.com/a"),
        ("https://example.com:8443/a", "https://example.com:8443/a"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com?q=1", "https://example.com/?q=1"),
        ("https://example.com/a.png#x", "https://example.com/a.png"),
        ("https://User@Example.com/A?B=C", "https://User@example.com/A?B=C"),
        ("https://[2001:DB8::1]:443/a", "https://[2001:db8::1]/a"),
        ("file:///tmp/a.png", "file:///tmp/a.png"),
        ("https://cdn.example.com/img/1.jpg?w=200&h=100", "https://cdn.example.com/img/1.jpg?w=200&h=100"),
        ("https://cdn.example.com/A%20B.png", "https://cdn.example.com/A%20B.png"),
        ("https://cdn.example.com/a.png#", "https://cdn.example.com/a.png"),
        ("https://cdn.example.com:443/a.png", "https://cdn.example.com/a.png"),
    ])
    func normalisation(input: String, expected: String) throws {
        #expect(try URLNormalizer(maxBytes: 1 << 20).normalize(input) == expected)
    }

    /// The fast path (already-normal URLs returned as they are) must agree with the full one:
    /// normalising twice changes nothing.
    @Test(arguments: ["https://a.test/x", "http://a-b.test/x?y=1", "https://a.test/x#f", "HTTPS://a.test/x",
                      "https://a.test:80/x", "https://a.test", "https://user@a.test/x", "s3://bucket/key"])
    func normalisationIsIdempotent(input: String) throws {
        let normalizer = URLNormalizer(maxBytes: 1 << 20)
        let once = try normalizer.normalize(input)
        #expect(try normalizer.normalize(once) == once)
    }

    /// The fast path scans the path eight bytes at a time: a fragment, a space, DEL or a control
    /// character at any offset of a path of any length must still take the full path (the
    /// fragment dropped, the others rejected), and a path without one is returned as it is.
    @Test func fastPathSeesAStopByteAtEveryOffset() throws {
        let normalizer = URLNormalizer(maxBytes: 1 << 20)
        for length in 1...40 {
            let path = "/" + String(repeating: "a", count: length - 1)
            #expect(try normalizer.normalize("https://h.test" + path) == "https://h.test" + path)
            for offset in 1..<length {
                let chars = Array(path)
                let before = String(chars[..<offset]), after = String(chars[(offset + 1)...])
                #expect(try normalizer.normalize("https://h.test" + before + "#" + after) == "https://h.test" + before)
                for stop in ["\u{20}", "\u{7F}", "\u{01}", "\u{1F}"] {
                    #expect(throws: ImageStoreError.self) { try normalizer.normalize("https://h.test" + before + stop + after) }
                }
                // Neighbours of the stop bytes, and bytes of 0x80 and up, pass.
                for fine in ["!", "$", "~", "\u{80}", "é"] {
                    let url = "https://h.test" + before + fine + after
                    #expect(try normalizer.normalize(url) == url)
                }
            }
        }
    }

    /// The fast path classifies scheme and host bytes by bitmap: every uppercase letter, in the
    /// scheme or the host, must still be lowercased, and every lowercase letter, digit and the
    /// other characters allowed there kept as they are.
    @Test func fastPathLowercasesEveryUppercaseSchemeAndHostLetter() throws {
        let normalizer = URLNormalizer(maxBytes: 1 << 20)
        for byte in UInt8(0x21)...0x7E {
            let c = String(UnicodeScalar(byte))
            let lower = c.lowercased()
            let isLetter = (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            if isLetter || "0123456789-._".contains(c) {
                #expect(try normalizer.normalize("https://h\(c)x.test/p") == "https://h\(lower)x.test/p")
            }
            if isLetter || "0123456789+-.".contains(c) {
                #expect(try normalizer.normalize("s\(c)s://h.test/p") == "s\(lower)s://h.test/p")
            }
        }
    }

    @Test(arguments: ["cdn.example.com/a.png", "https:/a", "https:// a", "https://", "https://host:99999/",
                      "https://host:8x/", "1http://a/", "https://a/b\nc"])
    func malformedURLsAreRejected(input: String) {
        #expect(throws: ImageStoreError.self) { try URLNormalizer(maxBytes: 1 << 20).normalize(input) }
        do {
            _ = try URLNormalizer(maxBytes: 1 << 20).normalize(input)
        } catch {
            guard case .malformedURL = error else { Issue.record("expected malformedURL, got \(error)"); return }
        }
    }

    // MARK: - Long URLs

    @Test func aHundredKiBURLRoundTrips() throws {
        let url = "https://cdn.example.com/" + String(repeating: "a", count: 100 * 1024) + ".png"
        try withTemporaryStore { store in
            try store.put(Data([7, 7, 7]), for: url)
            let back = try #require(try store.get(url))
            #expect(back.data == Data([7, 7, 7]))
            #expect(back.info.url == url)
            #expect(try store.get(url + "x") == nil)
        }
    }

    // MARK: - Collisions

    /// Every key hashes to the same 16 bytes, so every entry collides.
    private func collidingConfiguration() -> ImageStore.Configuration {
        var configuration = makeConfiguration()
        configuration.keyHasher = { _ in [UInt8](repeating: 0xAB, count: 16) }
        return configuration
    }

    @Test func aHashCollisionNeverReturnsAnotherURLsImage() throws {
        try withTemporaryStore(collidingConfiguration()) { store in
            try store.put(Data("first".utf8), for: "https://x.test/1")
            #expect(try store.get("https://x.test/2") == nil, "a colliding key must not find the other entry")
            try store.put(Data("second".utf8), for: "https://x.test/2")
            try store.put(Data("third".utf8), for: "https://x.test/3")
            #expect(try store.get("https://x.test/1")?.data == Data("first".utf8))
            #expect(try store.get("https://x.test/2")?.data == Data("second".utf8))
            #expect(try store.get("https://x.test/3")?.data == Data("third".utf8))
            #expect(try store.remove("https://x.test/2"))
            #expect(try store.get("https://x.test/2") == nil)
            #expect(try store.get("https://x.test/3")?.data == Data("third".utf8))
            try store.put(Data("second again".utf8), for: "https://x.test/2")
            try store.put(Data("first, replaced".utf8), for: "https://x.test/1")
            #expect(try store.get("https://x.test/2")?.data == Data("second again".utf8))
            #expect(try store.get("https://x.test/1")?.data == Data("first, replaced".utf8))
            #expect(try store.statistics().entryCount == 3)
        }
    }

    // MARK: - Key function

    @Test func aKeyFunctionMakesSignedURLsShareAnEntry() throws {
        var configuration = makeConfiguration()
        configuration.keyFunction = { url in url.components(separatedBy: "?").first! }
        try withTemporaryStore(configuration) { store in
            try store.put(Data([1]), for: "https://cdn.example.com/a.png?sig=abc&exp=1")
            let back = try #require(try store.get("https://cdn.example.com/a.png?sig=def&exp=2"))
            #expect(back.data == Data([1]))
            #expect(back.info.url == "https://cdn.example.com/a.png?sig=abc&exp=1", "the full URL is kept")
            try store.put(Data([2]), for: "https://cdn.example.com/a.png?sig=xyz")
            #expect(try store.statistics().entryCount == 1)
        }
    }
}
