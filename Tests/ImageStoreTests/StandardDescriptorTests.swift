import Foundation
import ImageStore
import ImageStoreTestSupport
import Testing

/// `ImageStore.init` never lets a store file become descriptor 0, 1 or 2, which a daemon may
/// have closed: a later write to "stderr" would land in the store.
@Suite struct StandardDescriptorTests {
    @Test func storeFilesNeverTakeAClosedStandardDescriptor() throws {
        let action = "hold-writer"  // opens the store as its writer: writer.lock, LMDB, a log segment
        try withTemporaryDirectory { directory throws in
            // The child starts with stdin and stderr closed (stdout is the pipe that says "ready");
            // `exec` keeps the pid, so /proc/PID/fd is the child's.
            let child = try ChildProcess.Collecting(
                "/bin/sh", ["-c", #"exec "$0" "$1" "$2" <&- 2>&-"#, ChildProcess.product("imgstore-test-child"), action, directory])
            defer { child.kill() }
            #expect(child.wait(for: "ready"), "\(child.text)")
            for fd in [0, 2] {
                let target = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(child.processIdentifier)/fd/\(fd)")
                #expect(target == "/dev/null", "fd \(fd) of the \(action) child is \(target)")
            }
        }
    }
}
