import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// What the store accepts from the validator: trailing bytes by default, the strict policy on request, and
/// deep verification that keeps images the deep decoder cannot decode (issue 15).
@Suite struct ValidatorPolicyTests {
    static let corpus = Fixtures.corpusRoot

    /// A JPEG followed by an MP4 header, as Android motion photos are laid out.
    static func motionPhoto() throws -> Data {
        let jpeg = try Fixtures.image("photo-baseline.jpg")
        let ftyp: [UInt8] = [0, 0, 0, 24] + Array("ftypmp42".utf8) + [0, 0, 0, 0] + Array("isommp42".utf8)
        return jpeg + Data(ftyp + [0, 0, 0, 16] + Array("mdat".utf8) + [UInt8](repeating: 7, count: 8))
    }

    @Test func trailingBytesAreStoredAndCountedByDefault() throws {
        let photo = try Self.motionPhoto(), jpeg = try Fixtures.image("photo-baseline.jpg")
        try withTemporaryStore(makeConfiguration(validation: .rejectInvalidDeep)) { store in
            let info = try store.put(photo, for: "https://x.test/motion.jpg")
            #expect(info.image?.trailingBytes == photo.count - jpeg.count)
            #expect(try store.get("https://x.test/motion.jpg")?.data == photo)
            #expect(try store.verify(ImageStore.VerifyOptions(deep: true)).problems.isEmpty)
        }
    }

    @Test func theStrictPolicyRejectsTrailingBytes() throws {
        var configuration = makeConfiguration(validation: .rejectInvalid)
        configuration.rejectTrailingBytes = true
        try withTemporaryStore(configuration) { store in
            let photo = try Self.motionPhoto()
            do {
                _ = try store.put(photo, for: "https://x.test/motion.jpg")
                Issue.record("the strict policy stored a JPEG with bytes after EOI")
            } catch {
                guard let failure = error as? ImageStoreError, case .invalidImage(_, let reason) = failure else { Issue.record("\(error)"); return }
                #expect(reason.contains("trailingData"))
            }
            #expect(try store.get("https://x.test/motion.jpg") == nil)
            _ = try store.put(try Fixtures.image("photo-baseline.jpg"), for: "https://x.test/plain.jpg")
        }
    }

    /// `verify --deep` and `validate --deep` share the validator's rule: a 12-bit JPEG is valid on its structure.
    @Test func deepVerifyKeepsATwelveBitJPEG() throws {
        let twelveBit = try Data(contentsOf: URL(fileURLWithPath: Self.corpus + "/jpeg/monkey12.jpg"))
        try withTemporaryStore(makeConfiguration(validation: .rejectInvalidDeep)) { store in
            let info = try store.put(twelveBit, for: "https://x.test/monkey12.jpg")
            #expect(info.image?.bitDepth == 12)
            #expect(try store.verify(ImageStore.VerifyOptions(deep: true)).problems.isEmpty)
        }
    }
}
