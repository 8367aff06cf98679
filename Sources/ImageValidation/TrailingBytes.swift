/// The one rule for bytes after an image's end marker (PNG IEND, JPEG EOI, GIF trailer, the WebP RIFF size).
///
/// Every decoder stops at the end marker and displays the image, and real origins serve such files: Android
/// motion photos append an MP4 after EOI, phones and editors append vendor trailers. So by default the bytes are
/// accepted and counted (`ImageFacts.trailingBytes`); the strict policy (`Limits.allowTrailingBytes = false`)
/// rejects them, for stores that must not carry a second payload behind an image.
enum TrailingBytes {
    /// The number of bytes from `end` to the end of the input.
    /// - Throws: `.trailingData` at `end` when there are some and the limits reject them.
    static func check(
        after end: Int, in input: ByteInput, limits: ImageValidator.Limits, marker: String
    ) throws(ImageValidationError) -> Int {
        // Invariant: each parser passes the offset just past its end marker, which lies inside the input.
        assert(end >= 0 && end <= input.count)
        let count = input.count - end
        if count > 0 && !limits.allowTrailingBytes {
            throw ImageValidationError(
                .trailingData, at: end, "\(count) bytes follow \(marker) (the strict trailing-data policy rejects them)")
        }
        return count
    }
}
