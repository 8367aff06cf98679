import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// A damaged page of LMDB's free list (the records of which pages later writes may reuse)
/// makes the commands that count free pages fail cleanly, never trap.
@Suite struct DamagedFreeListTests {
    /// Found by `DamagedPageTests` in a run whose store happened to have a free-list leaf:
    /// LMDB handed out free-list records whose first word (the page count) was garbage, and
    /// `verify` and `stats` summed those words into an arithmetic overflow (signal 4). Here
    /// the store always has a free list (half its entries removed, in several commits) and
    /// the count of every record in its leaf is overwritten with 0x7F bytes, so two records
    /// sum past `Int.max`.
    @Test func aFreeListRecordWithAGarbagePageCountIsAnErrorNotATrap() throws {
        try withTemporaryDirectory { directory in
            let store = directory + "/store"
            try AdminRun.makeStore(at: store)
            let opened = try ImageStore(path: store)
            for n in stride(from: 0, to: 400, by: 2) {
                #expect(try opened.remove("https://damage.test/images/\(n).bin", durability: .sync))
            }
            opened.close()
            let map = try LMDBPageMap(file: store + "/data.mdb")
            let counts = try map.pages.filter { $0.database == "(free list)" && $0.kind == .leaf }.flatMap { leaf in
                try Self.inlineValueOffsets(page: leaf.number, pageSize: map.pageSize, file: store + "/data.mdb")
            }
            try #require(counts.count >= 2, "the free list has two records in a leaf page (it has \(counts.count))")
            for offset in counts { try FileCorruption.overwrite(8, at: offset, in: store + "/data.mdb", with: 0x7F) }
            for command in [["stats"], ["verify"]] {
                let outcome = try AdminRun.run(store, command)
                let status = try #require(outcome.status, "\(outcome) hung")
                #expect(status < 128, "\(outcome)\n\(outcome.output)")
                #expect(status != 0, "\(outcome) reported no damage\n\(outcome.output)")
            }
        }
    }

    /// The file offsets of the values of the leaf page's nodes that hold their value inline
    /// (not in overflow pages): a free-list record's value starts with its page count.
    private static func inlineValueOffsets(page: Int, pageSize: Int, file: String) throws -> [Int] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        func integer(_ offset: Int, _ width: Int) -> Int {
            (0..<width).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) }
        }
        let start = page * pageSize
        let nodes = (integer(start + 12, 2) - 16) / 2  // mp_lower: the end of the node offsets
        return (0..<nodes).compactMap { index in
            let node = start + integer(start + 16 + 2 * index, 2)
            let (flags, keySize) = (integer(node + 4, 2), integer(node + 6, 2))
            return flags & 0x01 == 0 ? node + 8 + keySize : nil  // F_BIGDATA: the value is elsewhere
        }
    }
}
