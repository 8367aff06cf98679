import Foundation
import ImageStoreTestSupport
import Testing

/// `makeTemporaryDirectory()` directories are removed at the test process's exit, whatever the
/// test did with them (repeated runs once filled /tmp with leftover stores).
@Suite struct TemporaryDirectoryTests {
    @Test func aMadeDirectoryIsRegisteredForRemovalAtExit() throws {
        let path = makeTemporaryDirectory()
        #expect(TemporaryDirectories.isRegistered(path))
        try Data("x".utf8).write(to: URL(fileURLWithPath: path + "/data.mdb"))
        TemporaryDirectories.remove([path])  // what the exit handler does, for this one directory only
        #expect(!FileManager.default.fileExists(atPath: path))
    }
}
