import Foundation
import ImageStoreTestSupport
import Testing

/// Inputs that used to kill the release build with a trap or a signal: each must now end in
/// an exit status and, where it fails, one line on stderr.
@Suite struct CrashRegressionTests {
    // MARK: - fetch

    /// A static file server for the sample images on 127.0.0.1 (Python's `http.server`).
    private final class FixtureOrigin {
        let child: ChildProcess.Collecting
        let port: Int

        init() throws {
            let script = """
                import http.server, os, sys
                os.chdir(sys.argv[1])
                class Quiet(http.server.SimpleHTTPRequestHandler):
                    def log_message(self, *args): pass
                server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
                print("port", server.server_address[1], flush=True)
                server.serve_forever()
                """
            child = try ChildProcess.Collecting(Tools.python3 ?? "python3", ["-c", script, Fixtures.directory])
            guard child.wait(for: "\n"), let port = Int(child.text.split(separator: " ").last?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "") else {
                child.kill()
                throw AdminTestError(message: "the fixture origin did not start: \(child.text)")
            }
            self.port = port
        }

        deinit { child.kill() }
    }

    @Test(.enabled(if: Tools.python3 != nil, "needs python3 on PATH for a local origin"))
    func fetchOfSeveralURLsPrintsOneLinePerURLInOrder() throws {
        let origin = try FixtureOrigin()
        try withTemporaryDirectory { directory throws in
            let base = "http://127.0.0.1:\(origin.port)/"
            let result = try AdminBinary.run([
                "--store", directory + "/s", "fetch", base + "shapes.png", base + "gradient-rgb.png", base + "photo-baseline.jpg",
                base + "palette-16.png",
            ])
            #expect(result.status == 0, "\(result.standardError)")
            let sizes = try ["shapes.png", "gradient-rgb.png", "photo-baseline.jpg", "palette-16.png"].map { try Fixtures.image($0).count }
            let lines = result.output.split(separator: "\n").map(String.init)
            #expect(lines.count == 4)
            #expect(lines.map { $0.hasPrefix("network") } == [true, true, true, true])
            for (line, (name, size)) in zip(lines, zip(["shapes.png", "gradient-rgb.png", "photo-baseline.jpg", "palette-16.png"], sizes)) {
                #expect(line.hasSuffix(base + name), "\(line)")
                #expect(line.contains(" \(size) bytes "), "\(line)")
            }
            let list = try AdminBinary.run(["--store", directory + "/s", "ls"])
            #expect(list.output.split(separator: "\n").count == 4)
        }
    }

    // MARK: - Numbers out of range

    @Test(arguments: [
        (["fetch", "--timeout", "inf", "https://x.test/a.png"], "imgstore-admin fetch: --timeout needs a number of seconds greater than 0 and at most 86400; got 'inf' (see imgstore-admin --help)\n"),
        (["fetch", "--timeout", "1e300", "https://x.test/a.png"], "imgstore-admin fetch: --timeout needs a number of seconds greater than 0 and at most 86400; got '1e300' (see imgstore-admin --help)\n"),
        (["fetch", "--timeout", "nan", "https://x.test/a.png"], "imgstore-admin fetch: --timeout needs a number of seconds greater than 0 and at most 86400; got 'nan' (see imgstore-admin --help)\n"),
        (["fetch", "--concurrency", "100000", "https://x.test/a.png"], "imgstore-admin fetch: --concurrency needs a whole number from 1 to 1024; got '100000' (see imgstore-admin --help)\n"),
        (["import", "--ttl", "1e16", "."], "imgstore-admin import: --ttl needs a number of seconds greater than 0 and at most 3155760000 (100 years), or never; got '1e16' (see imgstore-admin --help)\n"),
        (["put", "--ttl", "1e16", "https://x.test/a.png", "-"], "imgstore-admin put: --ttl needs a number of seconds greater than 0 and at most 3155760000 (100 years), or never; got '1e16' (see imgstore-admin --help)\n"),
        (["put", "--ttl", "-1", "https://x.test/a.png", "-"], "imgstore-admin put: --ttl needs a number of seconds greater than 0 and at most 3155760000 (100 years), or never; got '-1' (see imgstore-admin --help)\n"),
    ] as [([String], String)])
    func hugeOrNonFiniteNumbersAreUsageErrors(arguments: [String], stderr: String) throws {
        try withTemporaryDirectory { directory throws in
            let result = try AdminBinary.run(["--store", directory + "/s"] + arguments, input: Data())
            #expect(result.status == 64)
            #expect(result.standardError == stderr)
            #expect(!FileManager.default.fileExists(atPath: directory + "/s"), "a usage error creates no store")
        }
    }
}
