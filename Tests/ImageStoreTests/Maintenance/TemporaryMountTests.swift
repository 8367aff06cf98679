import Foundation
import ImageStoreTestSupport
import Testing

/// The test harness's mounts are always unmounted, also while another process still holds a
/// file under the mount for seconds, as a child that another suite spawns does until its exec
/// (CI, s6f-noim-2: "umount: target is busy" after the 2 s the harness waited).
@Suite struct TemporaryMountTests {
    @Test(.enabled(if: TemporaryMount.isAvailable, TemporaryMount.unavailableReason))
    func aMountHeldBusyForThreeSecondsIsStillUnmounted() throws {
        try withTemporaryDirectory { directory in
            let source = directory + "/source", mounted = directory + "/ro"
            try FileManager.default.createDirectory(atPath: source, withIntermediateDirectories: true)
            try Data("held".utf8).write(to: URL(fileURLWithPath: source + "/file"))
            var holder: ChildProcess.Collecting?
            try TemporaryMount.readOnlyBind(of: source, at: mounted) {
                // Holds the file open through the mount for 3 s, then exits on its own.
                holder = try ChildProcess.Collecting("/bin/sh", ["-c", #"exec 3< "$1"; echo ready; sleep 3"#, "sh", mounted + "/file"])
                #expect(holder?.wait(for: "ready") == true)
            }
            // readOnlyBind returned once the umount succeeded: the mount point is an empty directory again.
            #expect(!FileManager.default.fileExists(atPath: mounted + "/file"), "unmounted: the source's file is not visible there")
            _ = holder?.kill()
        }
    }
}
