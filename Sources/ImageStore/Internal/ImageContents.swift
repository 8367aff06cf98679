import Foundation

/// An image's bytes and the `EntryInfo` a read returns with them: what a `StoredImage` holds.
///
/// Immutable (every stored property is a `let` of a `Sendable` type), hence `@unchecked
/// Sendable`, which a class that is not final needs. Not final: `DecodedEntry`, the object
/// the memory tier keeps, is one, so a memory hit returns it as it is.
class ImageContents: @unchecked Sendable {
    final let data: Data
    final let info: EntryInfo

    init(data: Data, info: EntryInfo) {
        self.data = data
        self.info = info
    }
}
