import CStreamingCopy
import CXXHash
import Foundation
import ImageStoreTestSupport
import Testing
@testable import ImageStore

/// `Checksum` calls libxxhash's run-time-dispatched XXH3 (AVX2, AVX-512) on x86-64: its values
/// must be the ones the plain functions give, or every store written before would fail its checks.
@Suite struct ChecksumTests {
    /// Sizes around the XXH3 internal boundaries (16, 128, 240 bytes, 1 KiB stripes, 64 KiB
    /// chunks), unaligned starts included.
    static let sizes = [0, 1, 3, 16, 17, 128, 129, 240, 241, 1_023, 1_024, 1_025, 65_535, 65_536, 65_537, 300_001, 1 << 20]

    private func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var rng = SeededGenerator(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    /// The streaming copy fills whole 64-byte lines between an ordinary head and tail: every
    /// destination offset within a line (from a 64-byte-aligned buffer), several source
    /// alignments, and lengths around a line must copy exactly, and write nothing outside the
    /// destination's range.
    @Test func theStreamingCopyCopiesEveryAlignmentAndLengthExactly() throws {
        let source = bytes(4_096, seed: 7)
        let capacity = 4_096 + 256
        var raw: UnsafeMutableRawPointer?
        try #require(posix_memalign(&raw, 64, capacity) == 0)
        let buffer = try #require(raw)
        defer { free(buffer) }
        var failures = 0
        source.withUnsafeBytes { from in
            for sourceOffset in [0, 1, 15, 16, 63] {
                for destinationOffset in 0..<64 {
                    for count in [0, 1, 15, 16, 63, 64, 65, 127, 128, 129, 200, 1_000, 2_048 + 37] {
                        buffer.initializeMemory(as: UInt8.self, repeating: 0xA5, count: capacity)
                        let start = 64 + destinationOffset
                        imgstore_streaming_copy(buffer + start, from.baseAddress! + sourceOffset, count)
                        let destination = UnsafeRawBufferPointer(start: buffer, count: capacity)
                        let copied = destination[start..<(start + count)].elementsEqual(source[sourceOffset..<(sourceOffset + count)])
                        let untouched = destination[..<start].allSatisfy { $0 == 0xA5 }
                            && destination[(start + count)...].allSatisfy { $0 == 0xA5 }
                        if !copied || !untouched { failures += 1 }
                    }
                }
            }
        }
        #expect(failures == 0)
    }

    @Test func theEmptyInputHasXXH3sPublishedValue() {
        #expect(Checksum.xxh3(nil, 0) == 0x2D06_8005_38D3_94C2)
    }

    @Test(arguments: sizes) func everyEntryPointMatchesThePlainFunction(size: Int) {
        let data = bytes(size + 1, seed: UInt64(size))
        data.withUnsafeBytes { all in
            let input = UnsafeRawBufferPointer(rebasing: all[1...])  // an odd start address
            #expect(Checksum.blob(input) == XXH3_64bits(input.baseAddress, input.count))
            #expect(Checksum.xxh3(input.baseAddress, input.count, seed: 0x1234_5678_9abc)
                == XXH3_64bits_withSeed(input.baseAddress, input.count, 0x1234_5678_9abc))
            for streaming in [false, true] {
                let (copy, checksum) = Checksum.copyingBlob(input, streaming: streaming)
                #expect(checksum == XXH3_64bits(input.baseAddress, input.count), "streaming: \(streaming)")
                #expect(copy == Data(input), "streaming: \(streaming)")
            }
            let state = XXH3_createState()!
            defer { XXH3_freeState(state) }
            XXH3_64bits_reset(state)
            var offset = 0
            while offset < input.count {  // uneven parts
                let n = min(7_919, input.count - offset)
                Checksum.update(state, input.baseAddress! + offset, n)
                offset += n
            }
            #expect(XXH3_64bits_digest(state) == XXH3_64bits(input.baseAddress, input.count))
        }
    }
}
