import Foundation

/// The `imgstore-admin` the end-to-end tests run: `$IMGSTORE_ADMIN_BINARY` when set (CI points it
/// at `.build/release/imgstore-admin`, the binary users get), else the debug build next to the
/// tests. A relative path is made absolute against the test process's working directory, so a test
/// that runs the tool in another directory still finds it.
public let adminBinaryPath: String = {
    guard let path = ProcessInfo.processInfo.environment["IMGSTORE_ADMIN_BINARY"], !path.isEmpty else {
        return ChildProcess.product("imgstore-admin")
    }
    return path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
}()
