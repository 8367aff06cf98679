import CImageScan

// JPEG interchange format, after ITU-T T.81 | ISO/IEC 10918-1 (section numbers below are T.81's).
//
//   stream   = SOI (FFD8) tables/misc* frame EOI (FFD9)                         §B.2.1, §B.3 (hierarchical)
//   marker   = FF (FF fill bytes)* code                                           §B.1.1.2
//   segment  = marker length(2, BE, includes itself, ≥ 2) parameters           §B.1.1.4
//   frame    = SOFn: P(1) Y(2) X(2) Nf(1) Nf×[Ci(1) Hi|Vi(1) Tqi(1)]           §B.2.2
//   scan     = SOS: Ns(1) Ns×[Csj(1) Tdj|Taj(1)] Ss(1) Se(1) Ah|Al(1), then entropy-coded data   §B.2.3
//   entropy  = bytes in which FF is followed by 00 (stuffing) or by RSTm (D0–D7), up to the next marker   §B.1.1.5, §F.1.2.3
//
// Validity conditions checked here:
//   1. SOI first; every segment's length within the input; no marker the standard does not define   §B.1
//   2. one frame (several only after DHP, hierarchical) before any scan; legal P, X > 0, Y > 0 or a DNL,
//      1…4 components with unique ids, 1…4 sampling factors, Tq 0…3                                 §B.2.2, §B.2.5
//   3. DQT / DHT (with a prefix-free code) / DAC / DRI segments well formed                         §B.2.4, §C
//   4. SOS: components from the frame in frame order, Σ Hi×Vi ≤ 10 when interleaved, Ss/Se/Ah/Al legal for
//      the process; Huffman and quantisation tables referenced are defined before the scan           §B.2.3, §G.1.1.1
//   5. entropy-coded data walked to the next marker: FF00 stuffing skipped, RSTm in modulo-8 order and only
//      when DRI set a restart interval                                                                §B.2.4.4, §F.1.2.3
//   6. EOI present after at least one scan; bytes after EOI counted (`ImageFacts.trailingBytes`), or rejected
//      when `Limits.allowTrailingBytes` is false.
//   7. every DC Huffman table a scan uses holds symbols 0…15 (0…16 in lossless frames): a DC symbol is a
//      difference category SSSS (§F.1.2.1.1, Table F.1; §H.1.2.2, Table H.2), and libjpeg refuses the table
//      otherwise ("Bogus Huffman table definition"). AC symbols RRRR|SSSS may take any byte value here.

struct JPEGStructureResult {
    var facts: ImageFacts
    var sofMarker: UInt8
    var isHierarchical: Bool
    var isLossless: Bool { [0xC3, 0xC7, 0xCB, 0xCF].contains(sofMarker) }
    var isArithmetic: Bool { sofMarker >= 0xC9 }
}

enum JPEGStructure {
    struct Component { var id: UInt8 = 0; var h = 0; var v = 0; var tq = 0 }

    /// A frame's components (1…4 here, condition 2) held inline: the walk over a file allocates nothing,
    /// where two arrays per frame were a heap allocation and free each per file.
    struct FrameComponents {
        private var slots = (Component(), Component(), Component(), Component())
        private(set) var count = 0

        subscript(index: Int) -> Component {
            // Invariant: only slots below `count` are read (indices come from `firstIndex(of:)`).
            assert(index >= 0 && index < count)
            switch index {
            case 0: return slots.0
            case 1: return slots.1
            case 2: return slots.2
            default: return slots.3
            }
        }

        /// Adds `component`; the frame header's length check has limited them to four.
        mutating func append(_ component: Component) {
            precondition(count < 4, "a JPEG frame has at most 4 components here")
            switch count {
            case 0: slots.0 = component
            case 1: slots.1 = component
            case 2: slots.2 = component
            default: slots.3 = component
            }
            count += 1
        }

        /// The index of the component with identifier `id`, if the frame has one.
        func firstIndex(of id: UInt8) -> Int? {
            for index in 0..<count where self[index].id == id { return index }
            return nil
        }
    }

    static func validate(_ input: ByteInput, limits: ImageValidator.Limits) throws(ImageValidationError) -> JPEGStructureResult {
        let n = input.count
        // §B.1.1.3, Table B.1: SOI = FFD8 starts the stream.
        guard n >= 2, input.u8(0) == 0xFF, input.u8(1) == 0xD8 else {
            throw ImageValidationError(.badSignature, at: 0, "The JPEG does not start with SOI (FF D8)")
        }
        var pos = 2
        var sof: UInt8 = 0
        var precision = 0, width = 0, height = 0
        var componentCount = 0                  // the first frame's (or DHP's): reported in the facts
        var scanComponents = FrameComponents()  // the current frame's: what scans may reference
        var hierarchical = false
        var dcDefined: UInt8 = 0, acDefined: UInt8 = 0, qDefined: UInt8 = 0
        var dcLargestSymbol = SIMD4<Int>(repeating: 0)   // per DC table id: checked when a scan uses it (no heap)
        var restartInterval = 0
        var scans = 0
        var metadataBytes = 0
        var awaitingDNL = false

        while true {
            // §B.1.1.2: a marker is FF, optional FF fill bytes, then a code that is neither 00 nor FF.
            guard pos < n else {
                throw ImageValidationError(.truncated, at: n, "The JPEG ends before its EOI marker")
            }
            guard input.u8(pos) == 0xFF else {
                throw ImageValidationError(.badChunk, at: pos, "Expected a marker at offset \(pos), found byte \(input.u8(pos))")
            }
            var m = pos + 1
            while m < n && input.u8(m) == 0xFF { m += 1 }
            guard m < n else { throw ImageValidationError(.truncated, at: n, "The JPEG ends inside a marker") }
            let code = input.u8(m)
            let markerStart = m - 1
            pos = m + 1
            func fail(_ kind: ImageValidationError.Kind, _ why: String) -> ImageValidationError {
                ImageValidationError(kind, at: markerStart, "Marker FF\(hex(code)) at offset \(markerStart): \(why)")
            }

            // §B.2.5: a frame with Y = 0 must be followed by DNL right after its first scan.
            if awaitingDNL && code != 0xDC { throw fail(.badHeader, "the frame's height is 0 and no DNL follows the first scan") }

            // Table B.1: markers without a length segment.
            switch code {
            case 0xD9:  // EOI
                guard scans > 0 else { throw fail(.badOrder, "EOI before any scan") }
                let trailing = try TrailingBytes.check(after: pos, in: input, limits: limits, marker: "the EOI marker")
                let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
                guard !overflow && pixels <= limits.maxPixels else {
                    throw ImageValidationError(.limitExceeded, at: 0, "\(width)×\(height) pixels exceed the limit of \(limits.maxPixels)")
                }
                let progressive = isProgressive(sof)
                let facts = ImageFacts(
                    format: .jpeg, width: width, height: height, bitDepth: precision, components: componentCount,
                    colorType: nil, isInterlaced: progressive, frameCount: 1, trailingBytes: trailing,
                    isDecodedByDeepMode: precision == 8 && !hierarchical && sof & 0x03 != 0x03)
                return JPEGStructureResult(facts: facts, sofMarker: sof, isHierarchical: hierarchical)
            case 0xD8: throw fail(.badOrder, "a second SOI")
            case 0xD0...0xD7: throw fail(.badOrder, "a restart marker outside entropy-coded data")
            case 0x01: continue  // TEM: standalone, no parameters (§B.1.1.3)
            default: break
            }

            // §B.1.1.4: every other marker starts a segment whose length counts itself.
            guard n - pos >= 2 else { throw ImageValidationError(.truncated, at: n, "The JPEG ends inside the length of marker FF\(hex(code))") }
            let length = input.be16(pos)
            guard length >= 2 else { throw fail(.badChunk, "segment length \(length) is below 2") }
            guard length <= n - pos else {
                throw ImageValidationError(.truncated, at: n, "Segment FF\(hex(code)) at offset \(markerStart) claims \(length) bytes but the file ends first")
            }
            let seg = pos + 2, segEnd = pos + length
            pos = segEnd

            switch code {
            case 0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF:
                // §B.2.2 frame header.
                guard sof == 0 || hierarchical else { throw fail(.badOrder, "a second frame header") }
                guard scans == 0 || hierarchical else { throw fail(.badOrder, "frame header after a scan") }
                guard length >= 8 else { throw fail(.badHeader, "frame header too short") }
                let p = Int(input.u8(seg)), y = input.be16(seg + 1), x = input.be16(seg + 3), nf = Int(input.u8(seg + 5))
                guard length == 8 + 3 * nf else { throw fail(.badHeader, "frame header length \(length) does not match \(nf) components") }
                let lossless = code & 0x03 == 0x03
                // Table B.2: P is 8 for baseline; 8 or 12 for extended and progressive DCT; 2–16 for lossless.
                let legalP = code == 0xC0 ? p == 8 : (lossless ? (2...16).contains(p) : (p == 8 || p == 12))
                guard legalP else { throw fail(.badHeader, "sample precision \(p) is not allowed for this process") }
                guard x >= 1 else { throw fail(.badHeader, "width is 0") }
                guard (1...4).contains(nf) else { throw fail(.badHeader, "\(nf) components; 1…4 are supported") }
                var comps = FrameComponents()
                for i in 0..<nf {
                    let c = seg + 6 + 3 * i
                    let id = input.u8(c), hv = input.u8(c + 1), tq = Int(input.u8(c + 2))
                    let h = Int(hv >> 4), v = Int(hv & 0x0F)
                    guard (1...4).contains(h) && (1...4).contains(v) else { throw fail(.badHeader, "component \(id) has sampling factors \(h)×\(v); 1…4 allowed") }
                    guard tq <= 3 && (!lossless || tq == 0) else { throw fail(.badHeader, "component \(id) uses quantisation table \(tq)") }
                    guard comps.firstIndex(of: id) == nil else { throw fail(.badHeader, "component id \(id) appears twice") }
                    comps.append(Component(id: id, h: h, v: v, tq: tq))
                }
                if !hierarchical {
                    precision = p; width = x; height = y; componentCount = nf
                }
                scanComponents = comps
                sof = code
                if y > 0 || hierarchical {
                    let (pixels, overflow) = width.multipliedReportingOverflow(by: max(height, 1))
                    guard !overflow && pixels <= limits.maxPixels else {
                        throw fail(.limitExceeded, "\(width)×\(height) pixels exceed the limit of \(limits.maxPixels)")
                    }
                }
            case 0xC4:
                // §B.2.4.2 Huffman tables: Tc|Th, 16 counts, values; several tables per segment.
                var t = seg
                while t < segEnd {
                    guard segEnd - t >= 17 else { throw fail(.badChunk, "Huffman table header cut short") }
                    let tc = input.u8(t) >> 4, th = input.u8(t) & 0x0F
                    guard tc <= 1 && th <= 3 else { throw fail(.badChunk, "Huffman table class \(tc) / id \(th)") }
                    var total = 0, code = 0
                    for l in 1...16 {
                        let count = Int(input.u8(t + l))
                        total += count
                        code += count
                        // §C: codes are assigned in order; an all-ones code, or more codes than fit, is invalid.
                        if count > 0 && code >= 1 << l { throw fail(.badChunk, "Huffman table has too many codes of length \(l)") }
                        code <<= 1
                    }
                    guard total <= 256 else { throw fail(.badChunk, "Huffman table has \(total) values") }
                    guard segEnd - t - 17 >= total else { throw fail(.badChunk, "Huffman table values cut short") }
                    if tc == 0 {
                        var largest = 0
                        for v in 0..<total { largest = max(largest, Int(input.u8(t + 17 + v))) }
                        dcLargestSymbol[Int(th)] = largest
                    }
                    t += 17 + total
                    if tc == 0 { dcDefined |= 1 << th } else { acDefined |= 1 << th }
                }
            case 0xCC:
                // §B.2.4.3 arithmetic conditioning: pairs of Tc|Tb, Cs.
                guard (length - 2) % 2 == 0 else { throw fail(.badChunk, "DAC length must be even") }
                var t = seg
                while t < segEnd {
                    let tc = input.u8(t) >> 4, tb = input.u8(t) & 0x0F, cs = input.u8(t + 1)
                    guard tc <= 1 && tb <= 3 else { throw fail(.badChunk, "DAC table class \(tc) / id \(tb)") }
                    if tc == 0 { guard cs & 0x0F <= cs >> 4 else { throw fail(.badChunk, "DAC DC bounds L > U") } }
                    else { guard (1...63).contains(cs) else { throw fail(.badChunk, "DAC AC Kx \(cs) not 1…63") } }
                    t += 2
                }
            case 0xDB:
                // §B.2.4.1 quantisation tables: Pq|Tq then 64 bytes (Pq 0) or 64 words (Pq 1).
                var t = seg
                while t < segEnd {
                    let pq = input.u8(t) >> 4, tq = input.u8(t) & 0x0F
                    guard pq <= 1 && tq <= 3 else { throw fail(.badChunk, "quantisation table precision \(pq) / id \(tq)") }
                    let size = 1 + 64 * (Int(pq) + 1)
                    guard segEnd - t >= size else { throw fail(.badChunk, "quantisation table cut short") }
                    t += size
                    qDefined |= 1 << tq
                }
            case 0xDD:
                // §B.2.4.4 restart interval.
                guard length == 4 else { throw fail(.badChunk, "DRI length must be 4") }
                restartInterval = input.be16(seg)
            case 0xDC:
                // §B.2.5 DNL: only right after the first scan of a frame whose Y was 0.
                guard length == 4 else { throw fail(.badChunk, "DNL length must be 4") }
                guard awaitingDNL else { throw fail(.badOrder, "DNL where none is expected") }
                let y = input.be16(seg)
                guard y >= 1 else { throw fail(.badHeader, "DNL height is 0") }
                height = y
                awaitingDNL = false
            case 0xDE:
                // §B.3.2 DHP: a frame-header-shaped segment that starts hierarchical mode.
                guard sof == 0 && scans == 0 && !hierarchical else { throw fail(.badOrder, "DHP after a frame") }
                guard length >= 8 else { throw fail(.badHeader, "DHP too short") }
                let nf = Int(input.u8(seg + 5))
                guard length == 8 + 3 * nf, (1...4).contains(nf) else { throw fail(.badHeader, "DHP length does not match its components") }
                precision = Int(input.u8(seg)); height = input.be16(seg + 1); width = input.be16(seg + 3)
                guard width >= 1 && height >= 1 else { throw fail(.badHeader, "DHP dimensions are 0") }
                componentCount = nf
                hierarchical = true
            case 0xDF:
                // §B.3.3 EXP.
                guard length == 3 && hierarchical else { throw fail(.badChunk, "EXP outside hierarchical mode or wrong length") }
            case 0xE0...0xEF, 0xFE:
                // §B.2.4.5, §B.2.4.6 application data and comments: opaque, counted against the metadata limit.
                metadataBytes += length
                guard metadataBytes <= limits.maxMetadataBytes else {
                    throw fail(.limitExceeded, "metadata segments total more than \(limits.maxMetadataBytes) bytes")
                }
            case 0xDA:
                // §B.2.3 scan header.
                guard sof != 0 else { throw fail(.badOrder, "scan before a frame header") }
                guard length >= 6 else { throw fail(.badChunk, "scan header too short") }
                let ns = Int(input.u8(seg))
                guard (1...4).contains(ns), length == 6 + 2 * ns else { throw fail(.badChunk, "scan header length \(length) does not match \(ns) components") }
                scans += 1
                guard scans <= limits.maxJPEGScans else { throw fail(.limitExceeded, "more than \(limits.maxJPEGScans) scans") }
                let ssPos = seg + 1 + 2 * ns
                let ss = Int(input.u8(ssPos)), se = Int(input.u8(ssPos + 1))
                let ah = Int(input.u8(ssPos + 2) >> 4), al = Int(input.u8(ssPos + 2) & 0x0F)
                let progressive = isProgressive(sof)
                let lossless = sof & 0x03 == 0x03
                let arithmetic = sof >= 0xC9
                if progressive {
                    // §G.1.1.1.1: Ss ≤ Se ≤ 63; a DC scan has Ss = Se = 0; AC scans hold one component; Al, Ah ≤ 13.
                    guard ss <= se && se <= 63 && (ss == 0) == (se == 0) && ah <= 13 && al <= 13 else {
                        throw fail(.badChunk, "progressive scan parameters Ss=\(ss) Se=\(se) Ah=\(ah) Al=\(al)")
                    }
                    guard ss == 0 || ns == 1 else { throw fail(.badChunk, "an AC progressive scan must hold one component") }
                } else if lossless {
                    // §H.1.2.1 / Table H.1: Ss is the predictor 1…7 (0 only in differential frames), Se = 0, Ah = 0.
                    guard ss <= 7 && se == 0 && ah == 0 && (ss >= 1 || hierarchical) else {
                        throw fail(.badChunk, "lossless scan parameters Ss=\(ss) Se=\(se) Ah=\(ah)")
                    }
                } else {
                    // §B.2.3: sequential DCT scans have Ss = 0, Se = 63, Ah = Al = 0.
                    guard ss == 0 && se == 63 && ah == 0 && al == 0 else {
                        throw fail(.badChunk, "sequential scan parameters Ss=\(ss) Se=\(se) Ah=\(ah) Al=\(al)")
                    }
                }
                var lastIndex = -1
                var blocks = 0
                for j in 0..<ns {
                    let cs = input.u8(seg + 1 + 2 * j), tables = input.u8(seg + 2 + 2 * j)
                    let td = Int(tables >> 4), ta = Int(tables & 0x0F)
                    // §B.2.3: Csj names a frame component, in the frame's order.
                    guard let index = scanComponents.firstIndex(of: cs), index > lastIndex else {
                        throw fail(.badChunk, "scan component \(cs) is not in the frame or out of order")
                    }
                    lastIndex = index
                    let component = scanComponents[index]
                    blocks += component.h * component.v
                    guard td <= 3 && ta <= 3 else { throw fail(.badChunk, "scan table selectors \(td)/\(ta)") }
                    if sof == 0xC0 { guard td <= 1 && ta <= 1 else { throw fail(.badChunk, "baseline allows table ids 0 and 1 only") } }
                    if !lossless && !hierarchical {
                        guard qDefined & (1 << component.tq) != 0 else {
                            throw fail(.badOrder, "quantisation table \(component.tq) is not defined before the scan")
                        }
                    }
                    // Huffman processes need the tables they reference (arithmetic coding has defaults, §F.1.4.4.1.4).
                    if !arithmetic {
                        let needsDC = lossless || (!progressive) || (ss == 0 && ah == 0)
                        let needsAC = !lossless && (!progressive || ss > 0)
                        if needsDC {
                            guard dcDefined & (1 << td) != 0 else { throw fail(.badOrder, "DC Huffman table \(td) is not defined before the scan") }
                            // Condition 7: categories above 15 (16 lossless) do not exist.
                            guard dcLargestSymbol[td] <= (lossless ? 16 : 15) else {
                                throw fail(.badChunk, "DC Huffman table \(td) holds symbol \(dcLargestSymbol[td]); difference categories end at \(lossless ? 16 : 15)")
                            }
                        }
                        if needsAC { guard acDefined & (1 << ta) != 0 else { throw fail(.badOrder, "AC Huffman table \(ta) is not defined before the scan") } }
                    }
                }
                // §B.2.3: in an interleaved scan Σ Hj×Vj ≤ 10.
                guard ns == 1 || blocks <= 10 else { throw fail(.badChunk, "interleaved scan needs \(blocks) blocks per MCU; at most 10") }
                pos = try walkEntropyData(input, from: segEnd, restartInterval: restartInterval)
                if height == 0 && !hierarchical && scans == 1 { awaitingDNL = true }
            default:
                // Table B.1: C8 (JPG), F0–FD (JPGn) and 02–BF are reserved; decoders stop on them.
                throw fail(.unknownCritical, "a reserved or undefined marker")
            }
        }
    }

    /// Walks entropy-coded data from `start` and returns the offset of the marker that ends it.
    /// §F.1.2.3: FF in data is followed by a stuffed 00; §B.2.4.4 / §F.1.2.3: RSTm markers (D0–D7) separate
    /// restart intervals and count modulo 8.
    static func walkEntropyData(_ input: ByteInput, from start: Int, restartInterval: Int) throws(ImageValidationError) -> Int {
        let n = input.count
        var pos = start
        var expectedRST: UInt8 = 0
        var intervalStart = start
        while true {
            // Stuffed FF00 pairs are skipped by the scan; q is the next FF that starts a marker (or ends the input).
            let q = nextMarker(input, from: pos)
            guard q + 1 < n else { throw ImageValidationError(.truncated, at: n, "The JPEG ends inside entropy-coded data (no EOI)") }
            let next = input.u8(q + 1)
            if next >= 0xD0 && next <= 0xD7 {
                guard restartInterval > 0 else {
                    throw ImageValidationError(.corruptData, at: q, "Restart marker at offset \(q) but no restart interval was defined")
                }
                guard next - 0xD0 == expectedRST else {
                    throw ImageValidationError(.corruptData, at: q, "Restart marker RST\(next - 0xD0) at offset \(q), expected RST\(expectedRST)")
                }
                guard q > intervalStart else { throw ImageValidationError(.corruptData, at: q, "Empty restart interval at offset \(q)") }
                expectedRST = (expectedRST + 1) & 7
                pos = q + 2
                intervalStart = pos
                continue
            }
            // Any other marker (or FF fill bytes before one, §B.1.1.2) ends the scan.
            guard q > intervalStart else {
                throw ImageValidationError(.corruptData, at: q, "Scan ending at offset \(q) holds no entropy-coded data")
            }
            return q
        }
    }

    /// The offset of the first FF at or after `from` that is not followed by a stuffed 00: a marker, or an FF
    /// in the input's last byte. `input.count` when there is none.
    ///
    /// This is where structure mode spends its time on a JPEG (entropy-coded data is ~90% of the file), so it
    /// is C (`CImageScan`): "FF here and not 00 next" tested on 128-byte blocks with AVX-512BW or AVX2, or 64
    /// with SSE2, chosen at run time for the CPU. FF00 stuffing, about one pair per 256 bytes, never leaves the
    /// vector loop. The four 16-byte SIMD compares this was in Swift ran at 13-15 GB/s per CPU second from
    /// memory here; AVX2 and AVX-512BW at 27-37 GB/s (`image_scan.c`).
    @inline(__always)
    static func nextMarker(_ input: ByteInput, from start: Int) -> Int {
        // Invariant: the walk never starts past the input's end (it returns or throws at `n`).
        assert(start >= 0 && start <= input.count)
        return imgstore_jpeg_next_marker(input.base.assumingMemoryBound(to: UInt8.self), input.count, start)
    }

    /// Table B.1: the progressive frame markers SOF2, SOF6, SOF10 and SOF14 are the SOF codes whose low
    /// two bits are 10 (no array to build per file).
    @inline(__always)
    static func isProgressive(_ sof: UInt8) -> Bool { sof & 0x03 == 0x02 }

    static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(b >> 4)], digits[Int(b & 0x0F)]])
    }
}
