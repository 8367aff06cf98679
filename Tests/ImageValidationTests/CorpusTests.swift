import Foundation
import ImageValidation
import Testing

@Suite("Corpus: PngSuite, libpng test PNGs, libjpeg-turbo test images")
struct CorpusTests {
    let validator = ImageValidator()

    // MARK: - Presence

    @Test func corpusIsPresent() {
        #expect(
            Corpus.pngSuite.count >= 170 && Corpus.jpegs.count >= 4 && Corpus.crashers.count >= 20 && Corpus.badpal.count >= 9,
            "The test corpus is missing or incomplete at \(Corpus.root.path). Place it at <repo>/../shared/corpus or set IMGSTORE_CORPUS.")
    }

    // MARK: - PngSuite

    @Test(arguments: Corpus.pngSuiteValid)
    func validPngSuiteFileIsAcceptedWithItsSize(name: String) throws {
        let bytes = try Corpus.bytes("pngsuite", name)
        let (w, h) = Corpus.pngSuiteSize(name)
        for mode in [ValidationMode.structure, .deep] {
            let facts = try validator.validate(bytes, mode: mode)
            #expect(facts.format == .png)
            #expect(facts.width == w && facts.height == h, "\(name) \(mode): \(facts.width)×\(facts.height)")
            // The name encodes interlacing (3rd letter i/n), colour type and depth (e.g. "3p04" = type 3, 4 bits).
            let chars = Array(name)
            #expect(facts.isInterlaced == (chars[3] == "i"))
            #expect(facts.colorType == Int(String(chars[4])))
            #expect(facts.bitDepth == Int(String(chars[6...7])))
        }
    }

    @Test(arguments: Corpus.pngSuiteCorrupt)
    func corruptPngSuiteFileIsRejected(name: String) throws {
        let bytes = try Corpus.bytes("pngsuite", name)
        #expect(throws: ImageValidationError.self) { try validator.validate(bytes) }
        #expect(throws: ImageValidationError.self) { try validator.validate(bytes, mode: .deep) }
        // A damaged signature is a damaged PNG, not an unknown format.
        #expect(ImageValidator.sniff(bytes) == .png)
    }

    // MARK: - libpng crashers and bad palettes

    @Test(arguments: Corpus.crashers)
    func crasherIsHandledInBothModes(name: String) throws {
        let bytes = try Corpus.bytes("libpng-testpngs/crashers", name)
        // The contract is "no crash, no hang, no huge allocation": either verdict is fine, but it must be a verdict.
        _ = verdict(bytes, .structure)
        _ = verdict(bytes, .deep)
        if name.hasPrefix("huge_") {
            // Each huge_* file claims a chunk far larger than itself; it must not be accepted.
            #expect(!verdict(bytes).isAccepted)
        }
    }

    @Test func badCRCIsRejectedInStructureMode() throws {
        let bytes = try Corpus.bytes("libpng-testpngs/crashers", "badcrc.png")
        #expect(verdict(bytes) == .rejected(.badChecksum))
    }

    @Test func badAdlerIsOnlyVisibleToTheDeepDecode() throws {
        let bytes = try Corpus.bytes("libpng-testpngs/crashers", "badadler.png")
        #expect(verdict(bytes).isAccepted)
        #expect(verdict(bytes, .deep) == .rejected(.corruptData))
    }

    @Test(arguments: Corpus.badpal)
    func badPaletteFileIsStructurallyValid(name: String) throws {
        let bytes = try Corpus.bytes("libpng-testpngs/badpal", name)
        #expect(verdict(bytes).isAccepted)
    }

    // MARK: - JPEG

    @Test(arguments: ["testorig.jpg", "testimgint.jpg", "testimgari.jpg"])
    func libjpegTurboTestImageIsAcceptedInBothModes(name: String) throws {
        let bytes = try Corpus.bytes("jpeg", name)
        let facts = try validator.validate(bytes)
        #expect(facts == (try validator.validate(bytes, mode: .deep)))
        #expect(facts.format == .jpeg && facts.width == 227 && facts.height == 149)
        #expect(facts.bitDepth == 8 && facts.components == 3)
    }

    /// Decision: 12-bit JPEG is valid, so deep mode accepts it on its structure (TurboJPEG 2.1 cannot decode
    /// 12-bit samples) and says so in `isDecodedByDeepMode`. One rule, in the validator, for `validate --deep`,
    /// `verify --deep` and `rejectInvalidDeep`.
    @Test func twelveBitJPEGIsAcceptedByDeepModeOnItsStructure() throws {
        let bytes = try Corpus.bytes("jpeg", "monkey12.jpg")
        let facts = try validator.validate(bytes)
        #expect(facts.bitDepth == 12)
        #expect(try validator.validate(bytes, mode: .deep) == facts)
        #expect(!facts.isDecodedByDeepMode)
        #expect(try validator.validate(Corpus.bytes("jpeg", "testorig.jpg")).isDecodedByDeepMode)
    }
}
