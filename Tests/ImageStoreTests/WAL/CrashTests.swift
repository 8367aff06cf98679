import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// Real processes, real `SIGKILL`s: every write a child acknowledged is there after recovery,
/// byte for byte (its XXH3 matches and the store verifies the bytes against it on read).
/// `IMGSTORE_CRASH_CYCLES` sets the number of kills (`Tools/crash-stress.sh` runs 200).
@Suite struct CrashTests {
    private let child = ChildProcess.product("imgstore-test-child")
    private var cycles: Int { ProcessInfo.processInfo.environment["IMGSTORE_CRASH_CYCLES"].flatMap(Int.init) ?? 8 }

    @Test(arguments: ["sync", "batched"])
    func everyAcknowledgedPutSurvivesKillMinusNine(mode: String) throws {
        try withTemporaryDirectory { directory throws in
            var random = SeededGenerator()
            print("CrashTests seed \(random.seed) (replay with IMGSTORE_SEED=\(random.seed))")
            var everAcked: [String: (size: Int, checksum: UInt64)] = [:]
            for cycle in 0..<cycles {
                let writer = try ChildProcess.Collecting(child, ["put-forever", directory, "4", mode, String(cycle)])
                guard writer.wait(for: "ready") else {
                    Issue.record("child did not start: \(writer.kill())")
                    return
                }
                usleep(UInt32.random(in: 20_000...250_000, using: &random))
                let acked = LogTest.acknowledged(in: writer.kill())
                everAcked.merge(acked) { $1 }

                let store = try ImageStore(path: directory, configuration: LogTest.configuration())
                for (url, expected) in acked {
                    let image = try store.get(url)
                    #expect(image?.info.byteCount == expected.size, "cycle \(cycle): \(url) lost")
                    #expect(image?.info.checksum == expected.checksum, "cycle \(cycle): \(url) changed")
                }
                store.close()
            }
            let store = try ImageStore(path: directory, configuration: LogTest.configuration())
            defer { store.close() }
            for (url, expected) in everAcked { #expect(try store.get(url)?.info.checksum == expected.checksum) }
            #expect(everAcked.count > cycles, "children acknowledged writes")
            try checkConsistency(of: store)
        }
    }

    // MARK: - Two processes

    @Test func aSecondWriterProcessIsRefusedWithTheHoldersPid() throws {
        try withTemporaryDirectory { directory throws in
            let holder = try ChildProcess.Collecting(child, ["hold-writer", directory])
            #expect(holder.wait(for: "ready"))
            defer { _ = holder.kill() }
            #expect(throws: ImageStoreError.writerLocked(path: directory, holder: "pid \(holder.processIdentifier)")) {
                try ImageStore(path: directory)
            }
        }
    }

    @Test func aReadOnlyProcessReadsWhileTheWriterWrites() throws {
        try withTemporaryDirectory { directory throws in
            let writer = try ChildProcess.Collecting(child, ["put-forever", directory, "2", "sync", "1"])
            defer { _ = writer.kill() }
            #expect(writer.wait(for: "ready"))
            var configuration = LogTest.configuration()
            configuration.readOnly = true
            let reader = try ImageStore(path: directory, configuration: configuration)
            var seen = 0
            for _ in 0..<30 {
                for entry in try reader.entries() {
                    let image = try #require(try reader.get(entry.url), "\(entry.url) listed but not readable")
                    #expect(image.data.count == entry.byteCount)
                    seen += 1
                }
                #expect(throws: ImageStoreError.readOnly(path: directory)) { try reader.put(Data([1]), for: "https://x.test/ro") }
                usleep(10_000)
            }
            reader.close()
            #expect(seen > 0, "the reader saw the writer's applied entries")
        }
    }
}
