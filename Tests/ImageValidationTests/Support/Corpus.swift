import Foundation
import ImageStoreTestSupport
import Testing

/// The shared test images: `<repo>/../shared/corpus`, or `$IMGSTORE_CORPUS`.
///
/// A missing corpus is a failure, never a skip: `CorpusPresenceTests` says where it looked.
enum Corpus {
    static let root = URL(fileURLWithPath: ImageStoreTestSupport.Fixtures.corpusRoot)

    static func names(in folder: String, suffix: String) -> [String] {
        let dir = root.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { $0.hasSuffix(suffix) }.sorted()
    }

    static func bytes(_ folder: String, _ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: root.appendingPathComponent(folder).appendingPathComponent(name)))
    }

    static let pngSuite = names(in: "pngsuite", suffix: ".png")
    static let pngSuiteValid = pngSuite.filter { !$0.hasPrefix("x") }
    static let pngSuiteCorrupt = pngSuite.filter { $0.hasPrefix("x") }
    static let crashers = names(in: "libpng-testpngs/crashers", suffix: ".png")
    static let badpal = names(in: "libpng-testpngs/badpal", suffix: ".png")
    static let jpegs = names(in: "jpeg", suffix: ".jpg")

    /// PngSuite's expected size, derived from the name (PngSuite.README): `sNN…` files are NN×NN; the
    /// cd[fhs] pixel-aspect files are 8×32, 32×8 and 8×8; every other file is 32×32.
    static func pngSuiteSize(_ name: String) -> (Int, Int) {
        let chars = Array(name)
        if chars[0] == "s", let n = Int(String(chars[1...2])) { return (n, n) }
        switch String(name.prefix(4)) {
        case "cdfn": return (8, 32)
        case "cdhn": return (32, 8)
        case "cdsn": return (8, 8)
        default: return (32, 32)
        }
    }
}
