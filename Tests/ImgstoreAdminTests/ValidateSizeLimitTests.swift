import Foundation
import ImageStoreTestSupport
import Testing

/// `validate` reads at most the entry size limit plus one byte of each file, as `put` does
/// (probe 14, finding 1): a larger input is an invalid file (status 1) with one line naming
/// the limit, never a trap or a process that eats the machine's memory.
@Suite struct ValidateSizeLimitTests {
    /// The store's maximum entry size (`ImageStore.Configuration.maxEntryBytes`).
    private static let limit = 64 << 20

    /// Runs `validate` under a 2 GB address-space limit, so that a regression (the whole input
    /// read into memory) fails the test with a trap instead of exhausting the machine.
    private static func validate(_ arguments: [String]) throws -> ProcessResult {
        try AdminBinary.shell(#"ulimit -v 2000000; exec "$ADMIN" validate "$@""#, arguments)
    }

    /// Failed before: a 10 GB sparse file (a PNG signature, then a hole) trapped at once
    /// reserving its whole size (exit 132 under the limit, SIGILL).
    @Test func aSparseFileLargerThanTheLimitIsInvalidNamingTheLimit() throws {
        try withTemporaryDirectory { directory throws in
            let sparse = directory + "/sparse.png"
            try Fixtures.image("shapes.png").prefix(8).write(to: URL(fileURLWithPath: sparse))
            let fd = open(sparse, O_WRONLY)
            #expect(fd >= 0)
            #expect(ftruncate(fd, 10 << 30) == 0, "the file system makes sparse files")
            close(fd)
            let good = Fixtures.directory + "/shapes.png"
            let result = try Self.validate([sparse, good])
            #expect(result.status == 1, "\(result.standardError)")
            #expect(result.output == "\(sparse): invalid: larger than the limit of \(Self.limit) bytes per entry\n\(good): ok, png 100x30\n")
            #expect(result.standardError == "imgstore-admin validate: some files are not valid images\n")
        }
    }

    /// Failed before: `/dev/zero` was read until memory ran out (a fatal error from `Data`
    /// under the limit, 6.9 GB of RSS within 20 s without one).
    @Test func anEndlessInputStopsAtTheLimitPlusOneByte() throws {
        let result = try Self.validate(["--json", "/dev/zero"])
        #expect(result.status == 1, "\(result.standardError)")
        let object = try #require(try JSONSerialization.jsonObject(with: result.standardOutput) as? [String: Any])
        #expect(object["ok"] as? Bool == false)
        #expect(object["path"] as? String == "/dev/zero")
        #expect(object["error"] as? String == "larger than the limit of \(Self.limit) bytes per entry")
    }

    /// How much of an endless stream `validate /dev/stdin` and `put URL -` read, measured: a
    /// writer counts the bytes the pipe took before the tool went away (EPIPE). That is what the
    /// tool read plus at most the pipe's 64 KiB buffer and one 4 KiB write: never more than the
    /// limit plus one byte, and never less (the tool must see that the input is too large).
    @Test(arguments: [["validate", "/dev/stdin"], ["--store", "STORE", "put", "https://x.test/a.png", "-"]])
    func anEndlessStreamIsReadToTheLimitPlusOneByteAndNoFurther(arguments: [String]) throws {
        let python = try #require(Tools.find("python3"), "python3 on PATH (Tools/install-deps.sh)")
        try withTemporaryDirectory { directory throws in
            let writer = #"""
                import os, sys
                chunk, total = b"\x89PNG\r\n\x1a\n" + bytes(4088), 0
                try:
                    while True:
                        total += os.write(1, chunk)
                except BrokenPipeError:
                    pass
                sys.stderr.write("written=%d\n" % total)
                """#
            let script = #""$1" -c "$2" | "$3" "${@:4}" > /dev/null 2>&1; echo "status=${PIPESTATUS[1]}""#
            let args = arguments.map { $0 == "STORE" ? directory + "/s" : $0 }
            let result = try ChildProcess.run("/usr/bin/env", ["bash", "-c", script, "bash", python, writer, AdminBinary.path] + args)
            let written = try #require(result.standardError.split(separator: "\n").last.flatMap { $0.hasPrefix("written=") ? Int($0.dropFirst(8)) : nil },
                                       "the writer's count: \(result.standardError)")
            #expect(result.output == (arguments[0] == "validate" ? "status=1\n" : "status=65\n"), "\(result.output)")
            #expect(written >= Self.limit + 1, "the tool read past the limit to know the input is too large (\(written))")
            #expect(written <= Self.limit + 1 + (64 << 10) + 4096, "read \(written - Self.limit - 1) bytes past the limit plus one")
        }
    }

    /// Exactly the limit is read whole and checked as an image; one byte more is refused.
    @Test func aFileOfExactlyTheLimitIsCheckedAndOneMoreByteIsRefused() throws {
        try withTemporaryDirectory { directory throws in
            let image = try Fixtures.image("shapes.png")
            let atLimit = directory + "/at-limit.png", over = directory + "/over.png"
            try (image + Data(count: Self.limit - image.count)).write(to: URL(fileURLWithPath: atLimit))
            try (image + Data(count: Self.limit - image.count + 1)).write(to: URL(fileURLWithPath: over))
            let result = try Self.validate([atLimit, over])
            #expect(result.status == 1)
            #expect(result.output == "\(atLimit): ok, png 100x30 (\(Self.limit - image.count) bytes after the end marker)\n"
                    + "\(over): invalid: larger than the limit of \(Self.limit) bytes per entry\n")
        }
    }
}
