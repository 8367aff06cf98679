import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

@Suite struct CorruptionTests {
    @Test func aFlippedByteInABlobIsDetectedAndNeverServed() throws {
        try withTemporaryDirectory { directory in
            // A blob with a marker we can find in data.mdb.
            let marker = Data("IMGSTORE-CORRUPTION-MARKER".utf8)
            let blob = marker + Data(repeating: 0x42, count: 20_000) + marker
            do {
                let store = try ImageStore(path: directory, configuration: makeConfiguration())
                try store.put(blob, for: "https://x.test/victim")
                try store.put(Data(repeating: 7, count: 5000), for: "https://x.test/bystander")
                store.close()
            }
            let offsets = try FileCorruption.offsets(of: marker, in: directory + "/data.mdb")
            #expect(offsets.count == 2)
            try FileCorruption.flipByte(at: offsets[0] + marker.count + 100, in: directory + "/data.mdb")

            let store = try ImageStore(path: directory, configuration: makeConfiguration())
            defer { store.close() }
            #expect { try store.get("https://x.test/victim") } throws: { error in
                guard case .checksumMismatch(let url, _, _) = error as? ImageStoreError else { return false }
                return url == "https://x.test/victim"
            }
            #expect(try store.statistics().corruptReads == 1)
            #expect(try store.get("https://x.test/bystander")?.data == Data(repeating: 7, count: 5000))
        }
    }
}
