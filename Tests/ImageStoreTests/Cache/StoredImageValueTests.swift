import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// `StoredImage` keeps value semantics although a memory hit hands out the memory tier's own
/// object as its contents: changing a returned image changes that copy only.
@Suite struct StoredImageValueTests {
    let url = "https://x.test/a.png"
    let bytes = Data((0..<300).map { UInt8($0 & 0xFF) })

    @Test func changingAMemoryHitChangesThatCopyNotTheCachedEntry() throws {
        try withTemporaryStore { store in
            try store.put(bytes, for: url)
            _ = try store.statistics()  // settles the log: the entry is in LMDB
            #expect(try store.image(for: url)?.source == .disk)  // and now in the memory tier
            var hit = try #require(try store.image(for: url))
            #expect(hit.source == .memory)
            let original = hit
            hit.data = Data([1, 2, 3])
            hit.info.url = "https://x.test/changed"
            hit.info.byteCount = 3
            #expect(hit.data == Data([1, 2, 3]) && hit.info.url == "https://x.test/changed")
            #expect(original.data == bytes && original.info.url == url)
            let again = try #require(try store.image(for: url))
            #expect(again.source == .memory)
            #expect(again.data == bytes && again.info.url == url && again.info.byteCount == bytes.count)
            #expect(again == original && again.hashValue == original.hashValue)
            #expect(hit != original)
        }
    }

    @Test func imagesBuiltApartCompareAndHashByValue() {
        let info = EntryInfo(url: url, byteCount: bytes.count, createdAt: Date(timeIntervalSince1970: 1))
        let a = StoredImage(data: bytes, info: info, source: .memory)
        let b = StoredImage(data: Data(bytes), info: info, source: .memory)
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(a != StoredImage(data: bytes, info: info, isStale: true, source: .memory))
        #expect(a != StoredImage(data: bytes, info: info, source: .disk))
        var c = a
        c.info.checksum = 7
        #expect(c != a && a.info.checksum == 0)
    }
}
