import Foundation

/// The pages of an LMDB data file, by database and kind, read straight from the file (LMDB
/// 0.9's layout, lmdb.h and mdb.c: a 16-byte page header `pgno, pad, flags, lower, upper`; meta
/// pages 0 and 1 holding the free and main databases' `MDB_db`; named databases as `F_SUBDATA`
/// nodes in the main database). So damage tests can aim at a branch, leaf or overflow page of
/// each database instead of at guessed offsets.
struct LMDBPageMap {
    enum Kind: String, CaseIterable { case branch, leaf, overflow }

    struct Page: Hashable, CustomStringConvertible {
        var number: Int
        var kind: Kind
        var database: String
        var description: String { "\(database) \(kind.rawValue) page \(number)" }
    }

    let pageSize: Int
    private(set) var pages: [Page] = []
    /// The nodes of each leaf page, in the page's order: the key, and the value when it lies
    /// in the leaf (not on overflow pages, not a named database's record).
    private(set) var nodes: [Int: [(key: [UInt8], value: [UInt8]?)]] = [:]

    init(file: String) throws {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
        func integer(_ offset: Int, _ width: Int) -> Int {
            (0..<width).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) }
        }
        // Meta: the header (16), then magic, version, address, mapsize (24), the free and main
        // MDB_db (48 each), last page, txnid. The free database's md_pad holds the page size.
        let metas = [0, integer(16 + 24, 4)].map { start in (start: start, txnid: integer(start + 16 + 128, 8)) }
        pageSize = integer(16 + 24, 4)
        let meta = metas.max { $0.txnid < $1.txnid }!.start + 16
        var visited: Set<Int> = []
        func walk(_ root: Int, database: String, named: ((String, Int) -> Void)?) {
            // P_INVALID (an empty database) reads as -1; a root past the file's end is not walked.
            let walkable = root > 1 && !visited.contains(root) && (root + 1) * pageSize <= bytes.count
            if walkable {
                visited.insert(root)
                let start = root * pageSize
                let flags = integer(start + 10, 2)
                let count = (integer(start + 12, 2) - 16) / 2
                let isBranch = flags & 0x01 != 0
                pages.append(Page(number: root, kind: isBranch ? .branch : .leaf, database: database))
                for index in 0..<max(0, count) {
                    let node = start + integer(start + 16 + 2 * index, 2)
                    let (low, high, nodeFlags, keySize) = (integer(node, 2), integer(node + 2, 2), integer(node + 4, 2), integer(node + 6, 2))
                    if isBranch {
                        walk(low | high << 16 | nodeFlags << 32, database: database, named: named)
                        continue
                    }
                    let keyBytes = node + 8 + keySize <= start + pageSize ? Array(bytes[(node + 8)..<(node + 8 + keySize)]) : []
                    let valueEnd = node + 8 + keySize + (low | high << 16)
                    let inline = nodeFlags & 0x03 == 0 && valueEnd <= start + pageSize
                    nodes[root, default: []].append((keyBytes, inline ? Array(bytes[(node + 8 + keySize)..<valueEnd]) : nil))
                    if nodeFlags & 0x01 != 0 {  // F_BIGDATA: the value is on overflow pages
                        let first = integer(node + 8 + keySize, 8)
                        guard (first + 1) * pageSize <= bytes.count else { continue }
                        pages.append(Page(number: first, kind: .overflow, database: database))
                    } else if nodeFlags & 0x02 != 0, let named {  // F_SUBDATA: a named database
                        let name = String(decoding: bytes[(node + 8)..<(node + 8 + keySize)], as: UTF8.self)
                        named(name, integer(node + 8 + keySize + 40, 8))
                    }
                }
            }
        }
        walk(integer(meta + 24 + 40, 8), database: "(free list)", named: nil)
        var databases: [(String, Int)] = []
        walk(integer(meta + 72 + 40, 8), database: "(main)") { databases.append(($0, $1)) }
        for (name, root) in databases { walk(root, database: name, named: nil) }
    }

    /// One page of each kind of each database: its first and, when it has several, one from the middle.
    var targets: [Page] {
        Dictionary(grouping: pages) { "\($0.database) \($0.kind)" }.values.flatMap { group -> [Page] in
            let sorted = group.sorted { $0.number < $1.number }
            return sorted.count > 2 ? [sorted[0], sorted[sorted.count / 2]] : [sorted[0]]
        }.sorted { ($0.database, $0.kind.rawValue, $0.number) < ($1.database, $1.kind.rawValue, $1.number) }
    }
}
