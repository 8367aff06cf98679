import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

@Suite struct CorruptionTests {
    /// Small blobs are hashed whole, then copied; blobs above 64 KiB are hashed and copied chunk by chunk in one pass
    /// (`Checksum.copyingBlob`): a flip in the first or in the last, partial chunk is caught either way, and an intact
    /// large blob of a size that is not a multiple of the chunk reads back byte for byte. With the memory tier on, the
    /// read's copy is the one the tier keeps, written with streaming stores; with it off, with ordinary ones.
    @Test(arguments: [(20_000, 100), (300_000, 100), (300_000, 299_000)], [true, false])
    func aFlippedByteInABlobIsDetectedAndNeverServed(sizeAndFlip: (size: Int, flipAt: Int), memoryTier: Bool) throws {
        let (size, flipAt) = sizeAndFlip
        var configuration = makeConfiguration()
        if !memoryTier { configuration.memoryCostLimit = 0 }
        try withTemporaryDirectory { directory in
            // A blob with a marker we can find in data.mdb.
            let marker = Data("IMGSTORE-CORRUPTION-MARKER".utf8)
            let blob = marker + Data(repeating: 0x42, count: size) + marker
            let bystander = Data((0..<(size + 4_321)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            do {
                let store = try ImageStore(path: directory, configuration: configuration)
                try store.put(blob, for: "https://x.test/victim")
                try store.put(bystander, for: "https://x.test/bystander")
                store.close()
            }
            let offsets = try FileCorruption.offsets(of: marker, in: directory + "/data.mdb")
            #expect(offsets.count == 2)
            try FileCorruption.flipByte(at: offsets[0] + marker.count + flipAt, in: directory + "/data.mdb")

            let store = try ImageStore(path: directory, configuration: configuration)
            defer { store.close() }
            #expect { try store.get("https://x.test/victim") } throws: { error in
                guard case .checksumMismatch(let url, _, _) = error as? ImageStoreError else { return false }
                return url == "https://x.test/victim"
            }
            #expect(try store.statistics().corruptReads == 1)
            #expect(try store.get("https://x.test/bystander")?.data == bystander)
            // Read again: from the memory tier when it is on, which must hold the same bytes.
            let again = try store.image(for: "https://x.test/bystander")
            #expect(again?.data == bystander)
            #expect(again?.source == (memoryTier ? .memory : .disk))
        }
    }
}
