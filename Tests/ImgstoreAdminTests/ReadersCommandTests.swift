import Foundation
import ImageStoreTestSupport
import Testing

/// `imgstore-admin readers`: LMDB's reader table, stale slots marked, `--clear` frees them.
@Suite struct ReadersCommandTests {
    private let admin = AdminBinary.path
    private let child = ChildProcess.product("imgstore-test-child")

    /// The table's rows (header dropped), each split into its fields.
    private func rows(_ output: String) -> [[String]] {
        output.split(separator: "\n").dropFirst().map { $0.split(separator: " ").map(String.init) }
    }

    @Test func listsEverySlotMarksThoseOfDeadProcessesAndClearsThem() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/store"
            #expect(try ChildProcess.run(admin, ["--store", store, "demo"]).status == 0)
            #expect(try ChildProcess.run(admin, ["--store", store, "readers"]).output == "no reader slots in use\n")
            let live = try ChildProcess.Collecting(child, ["hold-reader", store])
            defer { live.kill() }
            #expect(live.wait(for: "ready"))
            let dead = try ChildProcess.Collecting(child, ["hold-reader", store])
            #expect(dead.wait(for: "ready"))
            dead.kill()

            let listed = try ChildProcess.run(admin, ["--store", store, "readers"])
            #expect(listed.status == 0, "\(listed.standardError)")
            #expect(listed.output.hasPrefix("pid        thread           snapshot\n"))
            let slots = rows(listed.output)
            #expect(slots.count == 2, "\(listed.output)")
            #expect(slots.contains { $0.first == String(live.processIdentifier) && $0.count == 3 && Int($0[2]) != nil })
            #expect(slots.contains { $0.first == String(dead.processIdentifier) && $0.last == "stale" })

            let cleared = try ChildProcess.run(admin, ["--store", store, "readers", "--clear"])
            #expect(cleared.status == 0, "\(cleared.standardError)")
            #expect(cleared.output.hasPrefix("cleared 1 stale reader slot\npid "))
            #expect(rows(String(cleared.output.drop { $0 != "\n" }.dropFirst())).map(\.first) == [String(live.processIdentifier)])

            // With no process left, the next opener is LMDB's first and resets the whole table.
            live.kill()
            let after = try ChildProcess.run(admin, ["--store", store, "readers"])
            #expect(after.output == "no reader slots in use\n")
        }
    }

    /// As every read command (probe 14, finding 8): 66 "no store at PATH", not 74 "not an
    /// imgstore store … Use an empty or new directory". StoreCreationTests has the missing path.
    @Test func aDirectoryWithoutAStoreIsNoStore() throws {
        try withTemporaryDirectory { directory throws in
            let result = try ChildProcess.run(admin, ["--store", directory, "readers"])
            #expect(result.status == 66)
            #expect(result.output.isEmpty)
            #expect(result.standardError == "imgstore-admin readers: no store at \(directory)\n", "\(result.standardError)")
        }
    }
}
