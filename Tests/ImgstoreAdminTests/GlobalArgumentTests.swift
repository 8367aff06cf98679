import Foundation
import ImageStoreTestSupport
import Testing

/// The command line as a whole (probe 14, findings 13 and 19): arguments that become keys must
/// be valid UTF-8, `--store` needs a path, and `--version` works before any command.
@Suite struct GlobalArgumentTests {
    private static let shapes = Fixtures.directory + "/shapes.png"

    // MARK: - Invalid UTF-8 in an argument that becomes a key

    /// Failed before: `CommandLine.arguments` repairs both byte strings to U+FFFD, so
    /// `put` stored `https://x/��.png` (exit 0) and `get` of the other spelling served it.
    @Test(arguments: [#"\377\376"#, #"\376\377"#, #"\303"#, #"\355\240\200"#])
    func aURLThatIsNotValidUTF8IsAUsageError(bytes: String) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            // printf turns the octal escapes into the raw bytes; Swift strings cannot hold them.
            let script = #"""
                "$ADMIN" --store "$1" put "$(printf "https://x.test/$2.png")" "$3"; echo "put=$?"
                """#
            let put = try AdminBinary.shell(script, [store, bytes, Self.shapes])
            #expect(put.output == "put=64\n", "\(put.standardError)")
            #expect(put.standardError.hasPrefix("imgstore-admin put: URL is not valid UTF-8: 'https://x.test/\\x"), "\(put.standardError)")
            #expect(put.standardError.hasSuffix(".png' (see imgstore-admin --help)\n"), "\(put.standardError)")
            #expect(!FileManager.default.fileExists(atPath: store), "nothing was created")
        }
    }

    /// The bytes are shown as `\xHH`, so the two URLs the old code merged read differently.
    @Test func theMessageShowsTheInvalidBytes() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            #expect(try AdminBinary.run(["--store", store, "put", "https://x.test/ok.png", Self.shapes]).status == 0)
            let script = #"""
                "$ADMIN" --store "$1" get "$(printf 'https://x.test/\377\376.png')"; echo "get=$?"
                "$ADMIN" --store "$1" rm "$(printf 'https://x.test/\376\377.png')"; echo "rm=$?"
                "$ADMIN" --store "$1" fetch "$(printf 'http://127.0.0.1:9/\376.png')"; echo "fetch=$?"
                """#
            let result = try AdminBinary.shell(script, [store])
            #expect(result.output == "get=64\nrm=64\nfetch=64\n", "\(result.standardError)")
            #expect(result.standardError == """
                imgstore-admin get: URL is not valid UTF-8: 'https://x.test/\\xFF\\xFE.png' (see imgstore-admin --help)
                imgstore-admin rm: URL is not valid UTF-8: 'https://x.test/\\xFE\\xFF.png' (see imgstore-admin --help)
                imgstore-admin fetch: URL is not valid UTF-8: 'http://127.0.0.1:9/\\xFE.png' (see imgstore-admin --help)

                """)
        }
    }

    /// An option value that becomes part of every key (`import --base-url`, `--prefix`).
    @Test func anOptionValueThatBecomesAKeyMustBeValidUTF8() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let script = #"""
                "$ADMIN" --store "$1" import --base-url "$(printf 'https://x.test/\377/')" "$2"; echo "import=$?"
                AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s "$ADMIN" --store "$1" warm --shared-tier http://127.0.0.1:9/b "--prefix=$(printf 'p\376/')"; echo "warm=$?"
                """#
            let result = try AdminBinary.shell(script, [store, Fixtures.directory])
            #expect(result.output == "import=64\nwarm=64\n", "\(result.standardError)")
            #expect(result.standardError == """
                imgstore-admin import: --base-url is not valid UTF-8: 'https://x.test/\\xFF/' (see imgstore-admin --help)
                imgstore-admin warm: --prefix is not valid UTF-8: 'p\\xFE/' (see imgstore-admin --help)

                """)
            #expect(!FileManager.default.fileExists(atPath: store), "nothing was created")
        }
    }

    /// Text that is valid UTF-8, U+FFFD itself included, is a URL like any other.
    @Test func validUTF8IncludingTheReplacementCharacterIsStored() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            let put = try AdminBinary.run(["--store", store, "put", "https://x.test/\u{FFFD}é.png", Self.shapes])
            #expect(put.status == 0, "\(put.standardError)")
            #expect(put.output == "stored https://x.test/\u{FFFD}é.png (167 bytes, png 100x30)\n")
        }
    }

    // MARK: - --store needs a path

    /// Failed before: `--store ''` tried to create "" (74, a Foundation sentence), and
    /// `--store=` said "no store at " with nothing after it.
    @Test(arguments: [["--store", ""], ["--store="]])
    func anEmptyStorePathIsAUsageError(store: [String]) throws {
        try withTemporaryDirectory { directory throws in
            for command in [["put", "https://x.test/a.png", Self.shapes], ["ls"], ["readers"]] {
                let before = store + command
                let after = command + store
                for arguments in [before, after] {
                    let result = try AdminBinary.run(arguments, workingIn: directory)
                    #expect(result.status == 64, "\(arguments): \(result.standardError)")
                    #expect(result.standardError == "imgstore-admin \(command[0]): --store needs a path (see imgstore-admin --help)\n")
                }
            }
            let verify = try AdminBinary.run(store + ["verify"], workingIn: directory)
            #expect(verify.status == 16, "verify's usage status, as fsck's")
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "nothing was created")
        }
    }

    // MARK: - --version

    /// Failed before: `--version ls` was "unknown option --version for 'ls'" (64).
    @Test(arguments: [["--version", "ls"], ["--store", "nowhere", "--version", "put", "x", "y"], ["--version", "--store", "s", "ls"], ["--version"]])
    func versionAnywhereBeforeTheCommandPrintsTheVersion(arguments: [String]) throws {
        try withTemporaryDirectory { directory throws in
            let result = try AdminBinary.run(arguments, workingIn: directory)
            #expect(result.status == 0, "\(result.standardError)")
            #expect(result.output == "imgstore-admin 0.1.0\n")
            #expect(result.standardError.isEmpty)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty, "the command did not run")
        }
    }

    /// After the command it is that command's option, and no command has one.
    @Test func versionAfterTheCommandIsAnUnknownOption() throws {
        let result = try AdminBinary.run(["ls", "--version"])
        #expect(result.status == 64)
        #expect(result.standardError == "imgstore-admin ls: unknown option --version for 'ls' (see imgstore-admin --help)\n")
    }
}
