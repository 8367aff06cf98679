import CLMDB

/// A named database inside an environment (`MDB_dbi`). Valid for the environment's life.
package struct Database: Sendable, Hashable {
    let dbi: MDB_dbi
    /// The name it was opened with.
    package let name: String
}

/// Entry and page counts of one database (`mdb_stat`).
package struct DatabaseStatistics: Sendable, Hashable {
    package var entries: Int
    package var depth: Int
    package var branchPages: Int
    package var leafPages: Int
    package var overflowPages: Int
    /// Pages this database occupies.
    package var pages: Int { branchPages + leafPages + overflowPages }
}
