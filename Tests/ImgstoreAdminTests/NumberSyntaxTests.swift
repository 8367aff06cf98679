import Foundation
import ImageStoreTestSupport
import Testing

/// Numbers on the command line are plain decimals (probe 14, finding 14): seconds are digits
/// with an optional fraction and exponent, at least 0.001 (the store keeps time in
/// milliseconds); whole numbers are digits only. No sign, hex, `inf`/`nan`, spaces or `_`.
/// Before, `Double(String)` took hex floats (`--ttl 0x10` was 16 s) and a leading `+`,
/// `Int(String)` a leading `+`, and `--ttl 1e-300` passed "greater than 0" but expired at once.
@Suite struct NumberSyntaxTests {
    private static let url = "https://x.test/a.png"
    private static let shapes = Fixtures.directory + "/shapes.png"
    /// A port nothing listens on: a command that got past its options fails there, not with 64.
    private static let nowhere = "http://127.0.0.1:9"

    /// Runs the tool with a store path inside `directory` and fake tier credentials (the tier
    /// commands read their options before they send anything).
    private static func run(_ arguments: [String], in directory: String) throws -> ProcessResult {
        var environment = ProcessInfo.processInfo.environment
        environment["AWS_ACCESS_KEY_ID"] = "test-key"
        environment["AWS_SECRET_ACCESS_KEY"] = "test-secret"
        return try AdminBinary.run(["--store", directory + "/s"] + arguments, environment: environment)
    }

    /// Where each kind of number is read: the option, and the command line around its value.
    private static let secondsOptions: [(option: String, command: @Sendable (String) -> [String])] = [
        ("--ttl", { ["put", "--ttl", $0, url, shapes] }),
        ("--ttl", { ["import", "--ttl", $0, Fixtures.directory] }),
        ("--timeout", { ["fetch", "--timeout", $0, nowhere + "/a.png"] }),
        ("--tier-timeout", { ["warm", "--shared-tier", nowhere + "/bucket", "--tier-timeout", $0] }),
    ]
    private static let wholeNumberOptions: [(option: String, command: @Sendable (String) -> [String])] = [
        ("--concurrency", { ["fetch", "--concurrency", $0, nowhere + "/a.png"] }),
        ("--concurrency", { ["warm", "--shared-tier", nowhere + "/bucket", "--concurrency", $0] }),
        ("--limit", { ["warm", "--shared-tier", nowhere + "/bucket", "--limit", $0] }),
        ("--max-disk-bytes", { ["put", "--max-disk-bytes", $0, url, shapes] }),
    ]

    /// Runs each of `options` with `value` in a fresh directory and checks that it is refused
    /// as a usage error (64) that creates nothing, and that its one stderr line passes
    /// `expectMessage(line, option, command)`.
    private static func expectRefused(_ value: String, by options: [(option: String, command: @Sendable (String) -> [String])],
                                      sourceLocation: SourceLocation = #_sourceLocation,
                                      _ expectMessage: (String, String, String) -> Bool) throws {
        for (option, command) in options {
            try withTemporaryDirectory { directory throws in
                let arguments = command(value)
                let result = try run(arguments, in: directory)
                #expect(result.status == 64, "\(arguments): \(result.standardError)", sourceLocation: sourceLocation)
                #expect(expectMessage(result.standardError, option, arguments[0]), "\(arguments): \(result.standardError)", sourceLocation: sourceLocation)
                #expect(!FileManager.default.fileExists(atPath: directory + "/s"), "\(arguments): nothing was created", sourceLocation: sourceLocation)
            }
        }
    }

    // MARK: - Refused spellings

    /// Failed before for `0x10`, `0x1p4`, `+5`, `.5` and `5.` (accepted: put stored, fetch and
    /// warm went to the network).
    @Test(arguments: ["0x10", "0x1p4", "+5", ".5", "5.", "5e", "1e+", " 5", "5 ", "1_0", "inf", "nan", "-5", "0", "١"])
    func aSecondsValueThatIsNotAPlainDecimalIsAUsageError(value: String) throws {
        try Self.expectRefused(value, by: Self.secondsOptions) { line, option, command in
            line.hasPrefix("imgstore-admin \(command): \(option) needs a number of seconds greater than 0 and at most ")
                && line.hasSuffix("got '\(value)' (see imgstore-admin --help)\n")
        }
    }

    /// Failed before: all of them were accepted (`--ttl 1e-300` stored an entry that had
    /// already expired).
    @Test(arguments: ["1e-300", "0.0009", "0.0001", "9e-4"])
    func secondsBelowAMillisecondAreRefusedNamingTheSmallestValue(value: String) throws {
        try Self.expectRefused(value, by: Self.secondsOptions) { line, option, command in
            line == "imgstore-admin \(command): \(option) needs at least 0.001 seconds (times are kept in milliseconds); got '\(value)' (see imgstore-admin --help)\n"
        }
    }

    /// Failed before for `+5` (accepted everywhere).
    @Test(arguments: ["+5", "0x10", "1e3", "5.0", " 5", "5 ", "1_0", "١"])
    func aWholeNumberThatIsNotPlainDigitsIsAUsageError(value: String) throws {
        try Self.expectRefused(value, by: Self.wholeNumberOptions) { line, option, command in
            line.hasPrefix("imgstore-admin \(command): \(option) needs a whole number") && line.hasSuffix("got '\(value)' (see imgstore-admin --help)\n")
        }
    }

    // MARK: - Accepted spellings

    /// The spellings the help documents, up to the largest TTL; `1.5e3` is 1500 s. (Within 1 ms:
    /// `ls --json` shows each date in whole milliseconds, and both ends may round down.)
    @Test(arguments: [("5", 5_000), ("007", 7_000), ("2.25", 2_250), ("0.5", 500), ("1.5e3", 1_500_000), ("3E1", 30_000), ("3155760000", 3_155_760_000_000)])
    func aPlainDecimalTTLIsStoredAsThatManyMilliseconds(value: String, milliseconds: Int) throws {
        try withTemporaryDirectory { directory throws in
            let put = try Self.run(["put", "--ttl", value, Self.url, Self.shapes], in: directory)
            #expect(put.status == 0, "\(put.standardError)")
            let list = try Self.run(["ls", "--json"], in: directory)
            let entries = try #require(try JSONSerialization.jsonObject(with: list.standardOutput) as? [[String: Any]])
            let entry = try #require(entries.first)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let created = try #require((entry["createdAt"] as? String).flatMap(formatter.date(from:)))
            let expires = try #require((entry["expiresAt"] as? String).flatMap(formatter.date(from:)))
            #expect(abs(Int((expires.timeIntervalSince(created) * 1000).rounded()) - milliseconds) <= 1)
        }
    }

    /// The smallest TTL is taken, and is not "never".
    @Test func theSmallestTTLIsAccepted() throws {
        try withTemporaryDirectory { directory throws in
            let put = try Self.run(["put", "--ttl", "0.001", Self.url, Self.shapes], in: directory)
            #expect(put.status == 0, "\(put.standardError)")
            let list = try Self.run(["ls", "--json"], in: directory)
            let entries = try #require(try JSONSerialization.jsonObject(with: list.standardOutput) as? [[String: Any]])
            #expect(entries.first?["expiresAt"] is String)
        }
    }

    @Test func aPlainWholeNumberIsAccepted() throws {
        try withTemporaryDirectory { directory throws in
            let put = try Self.run(["put", "--max-disk-bytes", "0100000000", Self.url, Self.shapes], in: directory)
            #expect(put.status == 0, "\(put.standardError)")
        }
    }
}
