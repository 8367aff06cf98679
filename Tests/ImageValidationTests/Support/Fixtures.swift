import Foundation
import ImageStoreTestSupport
import Testing

/// Images made at test time with Debian's encoders (libjpeg-turbo-progs) or built byte by byte.
enum Fixtures {
    /// A deterministic RGB test card as binary PPM (P6): gradients plus noise so the JPEG has real entropy data.
    static func ppm(width: Int, height: Int, seed: UInt64 = 1) -> [UInt8] {
        var state = seed
        var out = Array("P6\n\(width) \(height)\n255\n".utf8)
        out.reserveCapacity(out.count + width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let noise = Int(state >> 60)
                out += [UInt8((x * 255 / max(width - 1, 1) + noise) & 0xFF), UInt8((y * 255 / max(height - 1, 1)) & 0xFF), UInt8((x ^ y) & 0xFF)]
            }
        }
        return out
    }

    static let tmp: URL = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("imgstore-validator-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }()

    /// Runs `tool args…` with `input` as the last argument, returning stdout. Throws if the tool is missing or fails.
    static func run(_ tool: String, _ args: [String], input: [UInt8]) throws -> [UInt8] {
        let inputURL = tmp.appendingPathComponent(UUID().uuidString)
        try Data(input).write(to: inputURL)
        defer { try? FileManager.default.removeItem(at: inputURL) }
        return try run(tool, args + [inputURL.path])
    }

    /// Runs `tool args…` (found on PATH), returning stdout. Throws if the tool is missing or fails.
    static func run(_ tool: String, _ args: [String]) throws -> [UInt8] {
        let result = try ChildProcess.run(try executable(tool), args)
        guard result.status == 0 else {
            throw FixtureError(message: "\(tool) \(args) exited with \(result.status): \(result.standardError)")
        }
        return [UInt8](result.standardOutput)
    }

    /// The first of `names` that is an executable on PATH. A missing tool is a failure naming the fix; a test
    /// that needs an optional tool says so with a condition (`hasImageMagick`, `hasPillow`) and is skipped.
    static func executable(_ names: String...) throws -> String {
        if let path = names.first(where: { $0.contains("/") && FileManager.default.isExecutableFile(atPath: $0) }) { return path }
        if let found = ToolsOnPath.find(names) { return found }
        throw FixtureError(message: "\(names.joined(separator: " or ")) not found on PATH; run Tools/install-deps.sh")
    }

    /// ImageMagick (`magick`, or `convert` before version 7) is on PATH.
    static let hasImageMagick = ToolsOnPath.find("magick", "convert") != nil
    static let noImageMagick: Comment = "needs ImageMagick (magick or convert) on PATH; Tools/install-deps.sh installs it"
    /// The python3 on PATH has Pillow.
    static let hasPillow = ToolsOnPath.python3CanImport("PIL")
    static let noPillow: Comment = "needs Pillow for the python3 on PATH; Tools/install-deps.sh installs it"

    struct FixtureError: Error, CustomStringConvertible { var message: String; var description: String { message } }

    static func cjpeg(_ args: [String], width: Int = 64, height: Int = 48, seed: UInt64 = 1) throws -> [UInt8] {
        try run("cjpeg", args, input: ppm(width: width, height: height, seed: seed))
    }

    // MARK: - GIF (GIF89a §17–§27)

    /// A minimal GIF: header, logical screen, 2-entry global colour table, optional comment, one image, trailer.
    /// The LZW bytes are the classic 1×1 encoding; the validator does not decode LZW.
    static func gif(width: Int = 3, height: Int = 2, frames: Int = 1, interlaced: Bool = false, comment: Bool = false) -> [UInt8] {
        var out = Array("GIF89a".utf8)
        out += le16(width) + le16(height) + [0x80, 0, 0]     // GCT flag, size 2^(0+1)
        out += [0, 0, 0, 0xFF, 0xFF, 0xFF]
        if comment { out += [0x21, 0xFE, 5] + Array("hello".utf8) + [0] }
        for _ in 0..<frames {
            out += [0x21, 0xF9, 4, 0, 10, 0, 0, 0]              // graphic control extension
            out += [0x2C] + le16(0) + le16(0) + le16(width) + le16(height) + [interlaced ? 0x40 : 0]
            out += [2, 2, 0x4C, 0x01, 0]                          // LZW min code size 2, one sub-block, terminator
        }
        out.append(0x3B)
        return out
    }

    // MARK: - WebP (RFC 9649)

    static func riff(_ chunks: [[UInt8]]) -> [UInt8] {
        let body = Array("WEBP".utf8) + chunks.flatMap { $0 }
        return Array("RIFF".utf8) + le32(body.count) + body
    }

    static func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
        Array(fourCC.utf8) + le32(payload.count) + payload + (payload.count % 2 == 1 ? [0] : [])
    }

    /// VP8L header: signature 2F, then width−1 (14 bits), height−1 (14 bits), alpha (1), version (3), LE.
    static func vp8l(width: Int, height: Int, alpha: Bool = false, version: Int = 0) -> [UInt8] {
        let bits = UInt32(width - 1) | UInt32(height - 1) << 14 | (alpha ? 1 << 28 : 0) | UInt32(version) << 29
        return chunk("VP8L", [0x2F] + le32(Int(bits)) + [0, 0, 0])
    }

    /// VP8 key frame header: frame tag (key frame, version 0, show, first partition size), start code, dims.
    static func vp8(width: Int, height: Int) -> [UInt8] {
        let partition = 4
        let tag = UInt32(partition) << 5 | 1 << 4
        return chunk("VP8 ", [UInt8(tag & 0xFF), UInt8(tag >> 8 & 0xFF), UInt8(tag >> 16 & 0xFF), 0x9D, 0x01, 0x2A]
            + le16(width) + le16(height) + [0, 0, 0, 0, 0, 0])
    }

    static func vp8x(width: Int, height: Int, flags: UInt8) -> [UInt8] {
        chunk("VP8X", [flags, 0, 0, 0] + le24(width - 1) + le24(height - 1))
    }

    static func anmf(width: Int, height: Int) -> [UInt8] {
        chunk("ANMF", le24(0) + le24(0) + le24(width - 1) + le24(height - 1) + le24(100) + [0] + vp8l(width: width, height: height))
    }

    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    static func le24(_ v: Int) -> [UInt8] { le16(v) + [UInt8(v >> 16 & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { le16(v) + le16(v >> 16) }
}
