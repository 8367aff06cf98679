#if canImport(Glibc)
import Glibc
#endif
// libFuzzer entry for ImageValidation, compiled together with Sources/ImageValidation by Tools/fuzz-validator.sh.
//
// Input layout: byte 0 selects the mode (even = structure, odd = deep); the rest is the image.
// IMGSTORE_FUZZ_MODE=structure or deep forces one mode whatever byte 0 says, so each mode can be fuzzed for a
// measured time of its own (Tools/fuzz-validator.sh passes it through).
// Beyond "no crash, hang, leak or OOM" (the sanitizers' job) it checks two invariants: deep mode runs structure
// checks first, so whatever deep mode accepts, structure mode accepts with the same facts; and deep PNG's two
// inflaters (libdeflate at once, zlib streaming for large images) give the same verdict on every stream.

/// A low pixel limit keeps deep decodes of tiny inputs with huge claimed sizes fast; the limit logic itself is
/// still exercised (inputs above it are rejected).
let fuzzValidator = ImageValidator(limits: ImageValidator.Limits(maxPixels: 1 << 22))

/// The mode forced by IMGSTORE_FUZZ_MODE, if any.
let forcedMode: ValidationMode? = getenv("IMGSTORE_FUZZ_MODE").flatMap { ValidationMode(rawValue: String(cString: $0)) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 1 else { return 0 }
    let mode: ValidationMode = forcedMode ?? (data[0] & 1 == 0 ? .structure : .deep)
    let image = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    _ = ImageValidator.sniff(image)
    let result = Result { () throws(ImageValidationError) in try fuzzValidator.validate(image, mode: mode) }
    if mode == .deep, case .success(let deepFacts) = result {
        let structureFacts = try? fuzzValidator.validate(image, mode: .structure)
        // Invariant: deep acceptance implies structure acceptance with identical facts.
        precondition(structureFacts == deepFacts, "deep accepted what structure did not: \(deepFacts)")
    }
    if mode == .deep, let facts = try? fuzzValidator.validate(image, mode: .structure), facts.format == .png {
        // Invariant: the at-once and the streaming inflater agree (same error kind, or both accept).
        let atOnce = zlibVerdict(image, facts, wholeBufferLimit: Int.max), streaming = zlibVerdict(image, facts, wholeBufferLimit: 0)
        precondition(atOnce == streaming, "libdeflate says \(String(describing: atOnce)), zlib \(String(describing: streaming))")
    }
    if case .failure(let error) = result {
        // Invariant: offsets point into (or one past) the input.
        precondition(error.offset >= 0 && error.offset <= image.count, "offset \(error.offset) outside \(image.count) bytes")
    }
    return 0
}

/// Deep PNG's zlib-stream check on one inflater: nil when it accepts, else the error's kind.
func zlibVerdict(_ image: UnsafeRawBufferPointer, _ facts: ImageFacts, wholeBufferLimit: Int) -> ImageValidationError.Kind? {
    do throws(ImageValidationError) {
        try PNGZlibStream.check(ByteInput(image), facts: facts, wholeBufferLimit: wholeBufferLimit)
        return nil
    } catch { return error.kind }
}
