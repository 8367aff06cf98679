// Temporary stand-in for the validator module's agreed API, replaced when it lands.
import Foundation

public enum ImageFormat: String, Sendable, Hashable, CaseIterable { case png, jpeg, gif, webp, unknown }
public enum ValidationMode: String, Sendable { case structure, deep }
public struct ImageFacts: Sendable, Hashable {
    public var format: ImageFormat
    public var width: Int
    public var height: Int
    public var bitDepth: Int
    public var components: Int
    public var colorType: Int?
    public var isInterlaced: Bool
    public var frameCount: Int?
    public init(format: ImageFormat, width: Int, height: Int, bitDepth: Int, components: Int, colorType: Int?, isInterlaced: Bool, frameCount: Int?) {
        self.format = format; self.width = width; self.height = height; self.bitDepth = bitDepth
        self.components = components; self.colorType = colorType; self.isInterlaced = isInterlaced; self.frameCount = frameCount
    }
}
public struct ImageValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var isUnknownFormat: Bool
    public var offset: Int
    public var description: String
}
public struct ImageValidator: Sendable {
    public struct Limits: Sendable { public static let `default` = Limits() }
    public init(limits: Limits = .default) {}
    public func validate(_ bytes: UnsafeRawBufferPointer, mode: ValidationMode = .structure) throws(ImageValidationError) -> ImageFacts {
        let b = Array(bytes)
        func be(_ o: Int, _ n: Int) -> Int { (o..<o + n).reduce(0) { $0 << 8 | Int(b[$1]) } }
        if b.count > 33, b.starts(with: [0x89, 0x50, 0x4E, 0x47]), b.suffix(8).starts(with: [0x49, 0x45, 0x4E, 0x44]) {
            return ImageFacts(format: .png, width: be(16, 4), height: be(20, 4), bitDepth: Int(b[24]), components: 3, colorType: Int(b[25]), isInterlaced: b[28] == 1, frameCount: nil)
        }
        if b.count > 4, b.starts(with: [0xFF, 0xD8]), b.suffix(2) == [0xFF, 0xD9] {
            var i = 2
            while i + 9 < b.count, b[i] == 0xFF {
                if [0xC0, 0xC1, 0xC2].contains(b[i + 1]) { return ImageFacts(format: .jpeg, width: be(i + 7, 2), height: be(i + 5, 2), bitDepth: Int(b[i + 4]), components: Int(b[i + 9]), colorType: nil, isInterlaced: b[i + 1] == 0xC2, frameCount: nil) }
                i += 2 + be(i + 2, 2)
            }
        }
        throw ImageValidationError(isUnknownFormat: !(b.starts(with: [0x89, 0x50]) || b.starts(with: [0xFF, 0xD8])), offset: 0, description: "unknown format")
    }
}
