import Foundation

/// Image bytes checked by a store's validator, so that putting them into that store does not
/// check them again (what `ImageLoader` does with every download: validate once, then store).
///
/// Made by `ImageStore.validate(_:for:)`. One made with `init` (a fake store's, in tests) is
/// validated as usual when put into a real store: only the store that checked the bytes
/// trusts the facts.
public struct ValidatedImage: Sendable, Hashable {
    /// The image bytes.
    public let data: Data
    /// What the validator learned from them.
    public let facts: ImageFacts
    /// The store whose validator produced `facts`; nil when made by `init`.
    private let validatedBy: ObjectIdentifier?

    /// Bytes with facts the caller vouches for (for fakes and tests); a real store validates
    /// them again when they are put.
    public init(data: Data, facts: ImageFacts) {
        self.init(data: data, facts: facts, validatedBy: nil)
    }

    init(data: Data, facts: ImageFacts, validatedBy: ObjectIdentifier?) {
        self.data = data
        self.facts = facts
        self.validatedBy = validatedBy
    }

    /// Whether `store`'s own validator produced these facts for `data`.
    func isVouched(by store: ImageStore, for data: Data) -> Bool {
        validatedBy == ObjectIdentifier(store) && data == self.data
    }
}

extension ImageStore {
    /// Checks `data` as an image the way `put` would (the configured depth and trailing-bytes
    /// policy), requiring a known format whatever `Configuration.validation` says, and returns
    /// it ready for `async.put(_:for:…)` without a second check.
    /// - Throws: `invalidImage` naming `url`; `emptyData`.
    public func validate(_ data: Data, for url: String) throws(ImageStoreError) -> ValidatedImage {
        guard !data.isEmpty else { throw .emptyData }
        let mode: ValidationMode = configuration.validation == .rejectInvalidDeep ? .deep : .structure
        let outcome = data.withUnsafeBytes { bytes in
            Result { () throws(ImageValidationError) in try validator.validate(bytes, mode: mode) }
        }
        switch outcome {
        case .success(let facts): return ValidatedImage(data: data, facts: facts, validatedBy: ObjectIdentifier(self))
        case .failure(let error): throw .invalidImage(url: URLNormalizer.excerpt(url), reason: error.description)
        }
    }
}
