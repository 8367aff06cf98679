import CTurboJPEG
import CZlib
import Foundation

/// Real encoded images for the store cases: JPEGs from TurboJPEG (`tjCompress2`) and PNGs (zlib-deflated RGB rows),
/// so validation, checksums and copies cost what they cost in production.
///
/// Encoding thousands of images would take minutes, so a *ladder* of base images is encoded once per format, sizes
/// about 10% apart from 3 KiB to 1 MiB; each workload image is the largest base below its target size plus a comment
/// (JPEG `COM` segment, PNG `tEXt` chunk) naming the image and padding it to the exact size. Every image is thus a
/// distinct, valid file whose bytes are at least ~90% entropy-coded image data.
enum ImageCorpus {
    enum Format: String, Sendable { case jpeg, png }

    /// The base images, smallest first, per format; built on first use (well under a second in release).
    static let ladders: [Format: [Data]] = [.jpeg: ladder(.jpeg), .png: ladder(.png)]

    // MARK: - Workload images

    /// A distinct valid image of `format`, about `size` bytes (exactly, unless `size` is below the smallest base),
    /// tagged with `tag` so no two images share bytes.
    static func image(_ format: Format, size: Int, tag: Int) -> Data {
        let bases = ladders[format]!
        let label = Array("imgstore-bench image \(tag) ".utf8)
        let overhead = label.count + (format == .jpeg ? 4 : 20)
        let base = bases.last { $0.count + overhead <= size } ?? bases[0]
        let padding = max(0, size - base.count - overhead)
        switch format {
        case .jpeg: return withJPEGComment(base, label: label, padding: padding)
        case .png: return withPNGText(base, label: label, padding: padding)
        }
    }

    /// JPEG: COM segments (B.2.4.5: `FF FE`, 16-bit length including itself, at most 65 533 payload bytes each)
    /// right after SOI.
    static func withJPEGComment(_ base: Data, label: [UInt8], padding: Int) -> Data {
        // Each segment costs 4 header bytes; take the extra ones out of the padding so the size stays exact.
        let segments = max(1, (label.count + padding + 65_532) / 65_533)
        let payload = label + [UInt8](repeating: UInt8(ascii: "."), count: max(0, padding - 4 * (segments - 1)))
        var out = Data(capacity: base.count + payload.count + 4 * segments)
        out.append(base.prefix(2))
        var offset = 0
        while offset < payload.count {
            let chunk = payload[offset..<min(offset + 65_533, payload.count)]
            out.append(contentsOf: [0xFF, 0xFE, UInt8((chunk.count + 2) >> 8), UInt8((chunk.count + 2) & 0xFF)])
            out.append(contentsOf: chunk)
            offset += chunk.count
        }
        out.append(base.dropFirst(2))
        return out
    }

    /// PNG: one `tEXt` chunk (keyword `Comment`, NUL, Latin-1 text) right after IHDR (which ends at byte 33).
    static func withPNGText(_ base: Data, label: [UInt8], padding: Int) -> Data {
        let text = Array("Comment".utf8) + [0] + label + [UInt8](repeating: UInt8(ascii: "."), count: max(0, padding - 8))
        var out = Data(capacity: base.count + text.count + 12)
        out.append(base.prefix(33))
        appendChunk("tEXt", text, to: &out)
        out.append(base.dropFirst(33))
        return out
    }

    // MARK: - Base images

    /// Base images of `format` whose sizes step by ~10% from 3 KiB to just over 1 MiB.
    static func ladder(_ format: Format) -> [Data] {
        // Bytes per pixel of this content at a middling size, to pick dimensions for each target size.
        let probe = encode(format, width: 256, height: 192, seed: 1)
        let bytesPerPixel = Double(probe.count) / Double(256 * 192)
        var images: [Data] = []
        var target = 3_000.0
        var seed: UInt64 = 2
        while target < 1.1 * Double(1 << 20) {
            let pixels = max(64.0, target / bytesPerPixel)
            let width = max(8, Int((pixels * 4 / 3).squareRoot()))
            images.append(encode(format, width: width, height: max(8, Int(pixels) / width), seed: seed))
            target *= 1.1
            seed += 1
        }
        return images.sorted { $0.count < $1.count }
    }

    static func encode(_ format: Format, width: Int, height: Int, seed: UInt64) -> Data {
        let rgb = pixels(width: width, height: height, seed: seed)
        switch format {
        case .jpeg: return jpeg(rgb, width: width, height: height)
        case .png: return png(rgb, width: width, height: height)
        }
    }

    /// Photo-like enough that the encoders have work to do: diagonal gradients with per-pixel noise.
    static func pixels(width: Int, height: Int, seed: UInt64) -> [UInt8] {
        var rng = SeededGenerator(seed: seed)
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let noise = rng.next()
                let i = (y * width + x) * 3
                rgb[i] = UInt8(truncatingIfNeeded: x * 255 / width + Int(noise & 0x1F))
                rgb[i + 1] = UInt8(truncatingIfNeeded: y * 255 / height + Int((noise >> 8) & 0x1F))
                rgb[i + 2] = UInt8(truncatingIfNeeded: (x + y) * 128 / (width + height) + Int((noise >> 16) & 0x3F))
            }
        }
        return rgb
    }

    /// Baseline JPEG, 4:2:0, quality 85, through TurboJPEG.
    static func jpeg(_ rgb: [UInt8], width: Int, height: Int) -> Data {
        guard let handle = tjInitCompress() else { fatalError("tjInitCompress failed") }
        defer { tjDestroy(handle) }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        let status = rgb.withUnsafeBufferPointer { pixels in
            tjCompress2(
                handle, pixels.baseAddress, Int32(width), 0, Int32(height), Int32(TJPF_RGB.rawValue), &buffer, &size,
                Int32(TJSAMP_420.rawValue), 85, 0)
        }
        guard status == 0, let buffer else { fatalError("tjCompress2: \(String(cString: tjGetErrorStr2(handle)))") }
        defer { tjFree(buffer) }
        return Data(bytes: buffer, count: Int(size))
    }

    /// 8-bit RGB PNG, filter type 0 on every row, one IDAT deflated at zlib level 6.
    static func png(_ rgb: [UInt8], width: Int, height: Int) -> Data {
        var raw = [UInt8]()
        raw.reserveCapacity((width * 3 + 1) * height)
        for y in 0..<height {
            raw.append(0)
            raw.append(contentsOf: rgb[(y * width * 3)..<((y + 1) * width * 3)])
        }
        var compressedSize = compressBound(UInt(raw.count))
        var compressed = [UInt8](repeating: 0, count: Int(compressedSize))
        let status = compress2(&compressed, &compressedSize, raw, UInt(raw.count), 6)
        precondition(status == Z_OK, "compress2 failed: \(status)")
        var out = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        appendChunk("IHDR", bigEndian32(width) + bigEndian32(height) + [8, 2, 0, 0, 0], to: &out)
        appendChunk("IDAT", Array(compressed[..<Int(compressedSize)]), to: &out)
        appendChunk("IEND", [], to: &out)
        return out
    }

    /// A PNG chunk: length, type, data, CRC-32 of type and data (PNG spec 5.3).
    static func appendChunk(_ type: String, _ body: [UInt8], to out: inout Data) {
        let typeBytes = Array(type.utf8)
        out.append(contentsOf: bigEndian32(body.count))
        out.append(contentsOf: typeBytes)
        out.append(contentsOf: body)
        var crc = crc32(0, typeBytes, 4)
        crc = body.withUnsafeBufferPointer { crc32(crc, $0.baseAddress, UInt32($0.count)) }
        out.append(contentsOf: bigEndian32(Int(crc)))
    }

    static func bigEndian32(_ value: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
         UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }
}

/// A deterministic set of images with their URLs: what the store cases put and read.
struct ImageSet: Sendable {
    var images: [Data]
    var urls: [String]
    var totalBytes: Int { images.reduce(0) { $0 + $1.count } }
    var count: Int { images.count }

    /// Images drawn from the size mix (or, with `small`, 4–16 KiB only), 70% JPEG and 30% PNG, until they add up to
    /// `bytes` (at least `minimumCount`). URLs are `https://cdn.example.com/img/<firstKey + i>.jpg` (`.png`).
    static func make(bytes: Int, small: Bool = false, minimumCount: Int = 1, firstKey: Int = 0, seed: UInt64 = 42)
        -> ImageSet
    {
        var rng = SeededGenerator(seed: seed)
        var set = ImageSet(images: [], urls: [])
        var total = 0
        while total < bytes || set.images.count < minimumCount {
            let size = small ? Int.random(in: (4 << 10)..<(16 << 10), using: &rng) : ImageSizeMix.size(using: &rng)
            let format: ImageCorpus.Format = Int.random(in: 0..<10, using: &rng) < 7 ? .jpeg : .png
            let key = firstKey + set.images.count
            let image = ImageCorpus.image(format, size: size, tag: key)
            set.images.append(image)
            set.urls.append("https://cdn.example.com/img/\(key).\(format == .jpeg ? "jpg" : "png")")
            total += image.count
        }
        return set
    }
}
