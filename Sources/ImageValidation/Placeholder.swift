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
        throw ImageValidationError(isUnknownFormat: true, offset: 0, description: "unknown format")
    }
}
