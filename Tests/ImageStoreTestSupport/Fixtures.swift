import Foundation

/// The sample images in `Tests/Fixtures` and the shared corpus next to the repository.
public enum Fixtures {
    /// The repository root, found from this source file's path.
    public static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    public static var directory: String { repositoryRoot + "/Tests/Fixtures" }

    /// The shared test images (PngSuite, libpng's crashers, libjpeg-turbo's): `$IMGSTORE_CORPUS`
    /// when set, else `<repo>/../shared/corpus`. Every test that reads the corpus finds it here.
    public static let corpusRoot: String = {
        if let override = ProcessInfo.processInfo.environment["IMGSTORE_CORPUS"], !override.isEmpty { return override }
        return URL(fileURLWithPath: repositoryRoot).deletingLastPathComponent().appendingPathComponent("shared/corpus").path
    }()

    /// Every sample image: file name and bytes.
    public static func images() throws -> [(name: String, data: Data)] {
        try FileManager.default.contentsOfDirectory(atPath: directory)
            .filter { $0.hasSuffix(".png") || $0.hasSuffix(".jpg") }
            .sorted()
            .map { ($0, try Data(contentsOf: URL(fileURLWithPath: directory + "/" + $0))) }
    }

    /// One sample image's bytes.
    public static func image(_ name: String) throws -> Data {
        try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
    }
}
