import Foundation
import ImageStoreTestSupport
import Testing

/// Read commands never create or change a store: they open it read-only, and a missing store
/// is an error (66; `verify`'s own status for it is 8) that creates nothing.
@Suite struct ReadCommandTests {
    static let readCommands: [[String]] = [
        ["ls"], ["ls", "--json"], ["stats"], ["stats", "--json"],
        ["get", "https://demo.imgstore.invalid/fixtures/shapes.png"], ["wal"], ["wal", "--json"],
        ["verify"], ["verify", "--json"], ["quarantine"], ["expire", "--dry-run"], ["compact", "--dry-run"],
    ]

    @Test(arguments: readCommands + [["export", "EXPORT"]])
    func aReadCommandLeavesEveryStoreFileAsItWas(arguments: [String]) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let before = try AdminBinary.fileFacts(store)
            let result = try AdminBinary.run(["--store", store] + arguments.map { $0 == "EXPORT" ? directory + "/export" : $0 })
            #expect(result.status == 0, "\(result.standardError)")
            #expect(try AdminBinary.fileFacts(store) == before)
        }
    }

    @Test(arguments: readCommands + [["export", "EXPORT"], ["rm", "https://x.test/a.png"], ["checkpoint"], ["compact"],
                                     ["expire"], ["quarantine", "--purge"],
                                     ["verify", "--repair"], ["verify", "--repair", "--json"]])
    func aMissingStoreIsStatus66AndNothingIsCreated(arguments: [String]) throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/typo"
            let result = try AdminBinary.run(["--store", store] + arguments.map { $0 == "EXPORT" ? directory + "/export" : $0 })
            let isVerify = arguments[0] == "verify"
            #expect(result.status == (isVerify ? 8 : 66))
            #expect(result.standardError == "imgstore-admin \(arguments[0]): no store at \(store)\n")
            #expect(result.output.isEmpty)
            #expect(!FileManager.default.fileExists(atPath: store))
            #expect(!FileManager.default.fileExists(atPath: directory + "/export"))
        }
    }

    @Test func anEmptyDirectoryIsNoStoreEither() throws {
        try withTemporaryDirectory { directory throws in
            for arguments in [["ls"], ["verify", "--repair"]] {
                let result = try AdminBinary.run(["--store", directory] + arguments)
                #expect(result.status == (arguments[0] == "verify" ? 8 : 66))
                #expect(result.standardError == "imgstore-admin \(arguments[0]): no store at \(directory)\n")
                #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
            }
        }
    }

    /// Read-only media (a read-only bind mount) and a full disk (a tmpfs filled up), each in a
    /// private mount namespace: every read command still works.
    @Test(.enabled(if: Tools.isRoot && Tools.find("unshare") != nil, "needs root and unshare for private mounts"),
          arguments: ["ro", "full"])
    func readCommandsWorkOnReadOnlyMediaAndAFullDisk(medium: String) throws {
        try withTemporaryDirectory { directory throws in
            let mount = directory + "/mnt"
            try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
            let commands = Self.readCommands.map { $0.map { "'\($0)'" }.joined(separator: " ") }
            let setUp = medium == "ro"
                ? #"""
                  "$ADMIN" --store "$1/s" demo --fixtures "$2" > /dev/null || exit 90
                  mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" || exit 91
                  touch "$1/probe" 2>/dev/null && exit 92
                  """#
                : #"""
                  mount -t tmpfs -o size=4m tmpfs "$1" || exit 90
                  "$ADMIN" --store "$1/s" demo --fixtures "$2" > /dev/null || exit 91
                  dd if=/dev/zero of="$1/filler" bs=64k 2>/dev/null
                  [ "$(df --output=avail "$1" | tail -1)" -eq 0 ] || exit 92
                  """#
            var script = setUp + "\n"
            for command in commands {
                script += #""$ADMIN" --store "$1/s" \#(command) > /dev/null || echo "\#(command): status $?""# + "\n"
            }
            let result = try ChildProcess.run("/usr/bin/env", ["unshare", "-m", "/bin/sh", "-c", script, "sh", mount, Fixtures.directory],
                                              environment: ["ADMIN": AdminBinary.path, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"])
            #expect(result.status == 0, "set-up step failed: \(result.standardError)")
            #expect(result.output == "", "\(result.standardError)")
        }
    }
}
