import Foundation

/// A fresh directory under the system's temporary directory, removed after `body` returns.
public func withTemporaryDirectory<R>(_ body: (String) throws -> R) throws -> R {
    let path = makeTemporaryDirectory()
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

/// A fresh, empty directory; the caller removes it.
public func makeTemporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "imgstore-test-" + UUID().uuidString
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
