import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ImageStore
import ImageStoreTestSupport
import Testing

/// A read-only `verify` only reads (issue 13 §3): it opens log segments `O_RDONLY`, so it needs
/// no write permission, and a segment a live writer retires between the listing and the open
/// is neither re-created as an empty stray `wal-N.log` nor reported as damage.
@Suite struct VerifyReadOnlyTests {
    /// A store whose log still holds segments (the writer did not close), every record of
    /// them applied to LMDB: what a running service leaves on disk at any moment.
    private func makeStoreWithAppliedLog(at path: String) throws {
        var configuration = LogTest.configuration()
        configuration.logSegmentBytes = 1 << 20
        let store = try ImageStore(path: path, configuration: configuration)
        for n in 0..<20 { try store.put(LogTest.smallEntry(n).data, for: LogTest.smallEntry(n).url) }
        try store.checkpoint()  // applies everything; the open segment stays
        store.abandonForTesting()
        try #require(try !LogTest.segments(path).isEmpty, "the log holds a segment")
    }

    private func readOnly(_ path: String, willOpenSegment: (@Sendable (String) -> Void)? = nil) throws -> ImageStore {
        var configuration = makeConfiguration()
        configuration.readOnly = true
        configuration.verifyWillOpenLogSegment = willOpenSegment
        return try ImageStore(path: path, configuration: configuration)
    }

    @Test func aSegmentRetiredBetweenListingAndOpeningIsNeitherCreatedNorReported() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store"
            try makeStoreWithAppliedLog(at: path)
            // As a checkpoint of the live writer would, right in verify's window.
            let store = try readOnly(path) { segment in unlink(segment) }
            defer { store.close() }
            let report = try store.verify()
            #expect(report.problems == [])
            #expect(try LogTest.segments(path) == [], "verify created no stray segment")
        }
    }

    @Test(.enabled(if: TemporaryMount.isAvailable, TemporaryMount.unavailableReason))
    func verifyOfAReadOnlyStoreDirectoryNeedsNoWritePermission() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/store"
            try makeStoreWithAppliedLog(at: path)
            try TemporaryMount.readOnlyBind(of: path, at: directory + "/ro") {
                let mounted = directory + "/ro"
                #expect(Glibc.open(mounted + "/probe", O_RDWR | O_CREAT, 0o644) == -1 && errno == EROFS, "the bind mount is read-only")
                do {
                    let store = try readOnly(mounted)
                    defer { store.close() }
                    let report = try store.verify()
                    #expect(report.problems == [])
                    #expect(report.logSegmentsChecked >= 1)
                    #expect(report.entriesChecked == 20)
                }
                let admin = try ChildProcess.run(AdminRun.binary, ["--store", mounted, "verify"])
                #expect(admin.status == 0, "\(admin.output)\(admin.standardError)")
                #expect(admin.output.hasPrefix("OK: 20 entries and 1 log segment(s) checked"), "\(admin.output)")
            }
        }
    }
}
