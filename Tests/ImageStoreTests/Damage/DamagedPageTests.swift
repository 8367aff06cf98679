import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// One damaged page of the B-tree (a bad sector, a stray write) never makes a command crash,
/// hang, or lie: listings and exports are whole or fail, verify names the damage, a write the
/// store cannot apply is refused, and what is undamaged stays readable and survives
/// `verify --repair`.
@Suite struct DamagedPageTests {
    static let count = 400
    static let newImage = Fixtures.directory + "/shapes.png"

    @Test func everyCommandFailsCleanlyOnADamagedBranchLeafOrOverflowPageOfEachDatabase() throws {
        try withTemporaryDirectory { directory in
            let pristine = directory + "/pristine"
            try AdminRun.makeStore(at: pristine, count: Self.count)
            let map = try LMDBPageMap(file: pristine + "/data.mdb")
            let kinds = Set(map.targets.map { "\($0.database) \($0.kind.rawValue)" })
            for expected in ["entries branch", "entries leaf", "blobs branch", "blobs leaf", "blobs overflow", "access leaf", "expiry leaf", "meta leaf"] {
                #expect(kinds.contains(expected), "the test store has a \(expected) page (it has \(kinds.sorted()))")
            }
            var case_ = 0
            for page in map.targets {
                for (what, offset) in [("header", 0), ("middle", map.pageSize / 2)] {
                    case_ += 1
                    let store = directory + "/case-\(case_)"
                    try FileManager.default.copyItem(atPath: pristine, toPath: store)
                    try FileCorruption.overwrite(16, at: page.number * map.pageSize + offset, in: store + "/data.mdb")
                    try checkCommands(on: store, damage: "16 bytes at the \(what) of the \(page)", scratch: directory + "/export-\(case_)")
                    try? FileManager.default.removeItem(atPath: store)
                }
            }
        }
    }

    private func checkCommands(on store: String, damage: String, scratch: String) throws {
        func ran(_ outcome: AdminRun.Outcome) -> Bool {
            let status = outcome.status ?? 999
            #expect(status < 128, "\(outcome): \(damage)")
            return status < 128
        }
        let expectedURLs = Set((0..<Self.count).map { "https://damage.test/images/\($0).bin" })

        let list = try AdminRun.run(store, ["ls"])
        if ran(list) {
            #expect([0, 74].contains(list.status!), "\(list): \(damage)")
            if list.status == 0 {
                let urls = list.output.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
                #expect(urls.count == Self.count && Set(urls) == expectedURLs, "ls exited 0 with \(urls.count) lines (\(Set(urls).count) URLs): \(damage)")
            }
        }
        let export = try AdminRun.run(store, ["export", scratch])
        if ran(export) {
            #expect([0, 74].contains(export.status!), "\(export): \(damage)")
            if export.status == 0 {
                let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: scratch + "/manifest.json"))) as? [String: Any]
                let urls = (manifest?["entries"] as? [[String: Any]] ?? []).compactMap { $0["url"] as? String }
                #expect(Set(urls) == expectedURLs && urls.count == Self.count, "export exited 0 with \(urls.count) entries: \(damage)")
            }
        }
        let verify = try AdminRun.run(store, ["verify"])
        if ran(verify) {
            #expect([0, 4].contains(verify.status!), "\(verify): \(damage)")
            if verify.status == 0 { #expect(list.status == 0 && export.status == 0, "verify found nothing wrong but ls or export failed: \(damage)") }
        }
        let before = try AdminRun.readEach(store, count: Self.count)
        #expect(before.status == 0 || (before.status == 3 && before.results.isEmpty), "reading every entry ended with \(before.status.map(String.init) ?? "a hang"): \(damage)")
        #expect(!before.results.values.contains("wrong"), "a read returned wrong bytes: \(damage)")
        let readable = Set(before.results.filter { $0.value == "ok" }.keys)

        let put = try AdminRun.run(store, ["put", "https://damage.test/new.png", Self.newImage])
        if ran(put) {
            #expect([0, 74].contains(put.status!), "\(put): \(damage)")
            if put.status == 0 {
                let get = try AdminRun.run(store, ["get", "https://damage.test/new.png"])
                #expect(get.status == 0, "a put was acknowledged and then not readable (\(get)): \(damage)")
            }
        }
        let repair = try AdminRun.run(store, ["verify", "--repair"])
        if ran(repair) {
            #expect([0, 1, 4].contains(repair.status!), "\(repair): \(damage)")
            let after = try AdminRun.readEach(store, count: Self.count)
            #expect(after.status == 0 || (after.status == 3 && after.results.isEmpty), "reading after repair ended with \(after.status.map(String.init) ?? "a hang"): \(damage)")
            let lost = readable.filter { after.results[$0] != "ok" }.sorted()
            #expect(lost.isEmpty, "verify --repair lost \(lost.count) entries that were readable (\(lost.prefix(5))…): \(damage)")
            #expect(!after.results.values.contains("wrong"), "a read returned wrong bytes after repair: \(damage)")
            if repair.status == 1 {
                let again = try AdminRun.run(store, ["verify"])
                #expect(again.status == 0, "verify after a repair that fixed everything: \(again): \(damage)")
            }
        }
    }
}
