import CImageScan
import ImageStoreTestSupport
import Testing

/// The JPEG entropy-data scan (`CImageScan`) picks its vector width at run time; every width must find the
/// marker the byte-by-byte reference finds, from every start offset, so structure mode's verdicts do not
/// depend on the CPU.
@Suite("JPEG entropy scan: every vector width finds the same marker")
struct EntropyScanTests {
    static let best = imgstore_scan_best_tier()

    /// Entropy-coded-looking bytes: FF mostly followed by a stuffed 00, sometimes by a marker code, FF fill or
    /// nothing (the input's last byte), in buffers around the 64- and 128-byte block sizes.
    static func buffers(_ generator: inout SeededGenerator) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for length in Array(0...300) + [511, 512, 513, 1000, 4096] {
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...254, using: &generator) }
            for i in bytes.indices where Int.random(in: 0..<12, using: &generator) == 0 {
                bytes[i] = 0xFF
                if i + 1 < length {
                    bytes[i + 1] = Int.random(in: 0..<6, using: &generator) == 0
                        ? [0xD0, 0xD9, 0xFF, 0x01].randomElement(using: &generator)! : 0x00
                }
            }
            out.append(bytes)
        }
        return out
    }

    func agrees(_ tier: imgstore_scan_tier) {
        var generator = SeededGenerator()
        print("EntropyScanTests seed \(generator.seed) (replay with IMGSTORE_SEED)")
        var checked = 0
        for bytes in Self.buffers(&generator) {
            bytes.withUnsafeBufferPointer { buffer in
                let base = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!
                for from in 0...buffer.count {
                    let expected = imgstore_jpeg_next_marker_tier(base, buffer.count, from, IMGSTORE_SCAN_SCALAR)
                    let found = imgstore_jpeg_next_marker_tier(base, buffer.count, from, tier)
                    if found != expected {
                        Issue.record("length \(buffer.count), from \(from): tier \(tier.rawValue) found \(found), the reference \(expected)")
                        return
                    }
                    checked += 1
                }
            }
        }
        #expect(checked > 50_000)   // every start offset of every buffer: 52 088
    }

    /// One marker at every offset of a 600-byte block of stuffed data, found from every start before it.
    func findsALoneMarkerAtEveryOffset(_ tier: imgstore_scan_tier) {
        for offset in 0..<600 {
            var bytes = [UInt8](repeating: 0x12, count: 602)
            for i in stride(from: 1, to: 600, by: 7) where i != offset && i + 1 != offset { bytes[i] = 0xFF; bytes[i + 1] = 0x00 }
            bytes[offset] = 0xFF
            bytes[offset + 1] = 0xD9
            bytes.withUnsafeBufferPointer { buffer in
                for from in [0, max(0, offset - 129), max(0, offset - 64), offset] {
                    let found = imgstore_jpeg_next_marker_tier(buffer.baseAddress!, buffer.count, from, tier)
                    #expect(found == offset, "marker at \(offset), scan from \(from): found \(found)")
                }
            }
        }
    }

    @Test func theReferenceFindsALoneMarker() { findsALoneMarkerAtEveryOffset(IMGSTORE_SCAN_SCALAR) }

    @Test(.enabled(if: best.rawValue >= IMGSTORE_SCAN_SSE2.rawValue, "this CPU has no SSE2 (not x86-64)"))
    func sse2AgreesWithTheReference() {
        agrees(IMGSTORE_SCAN_SSE2)
        findsALoneMarkerAtEveryOffset(IMGSTORE_SCAN_SSE2)
    }

    @Test(.enabled(if: best.rawValue >= IMGSTORE_SCAN_AVX2.rawValue, "this CPU has no AVX2"))
    func avx2AgreesWithTheReference() {
        agrees(IMGSTORE_SCAN_AVX2)
        findsALoneMarkerAtEveryOffset(IMGSTORE_SCAN_AVX2)
    }

    @Test(.enabled(if: best.rawValue >= IMGSTORE_SCAN_AVX512BW.rawValue, "this CPU has no AVX-512BW"))
    func avx512bwAgreesWithTheReference() {
        agrees(IMGSTORE_SCAN_AVX512BW)
        findsALoneMarkerAtEveryOffset(IMGSTORE_SCAN_AVX512BW)
    }
}
