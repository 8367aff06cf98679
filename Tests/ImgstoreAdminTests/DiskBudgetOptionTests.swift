import Foundation
import ImageStoreTestSupport
import Testing

/// `--max-disk-bytes N`: the disk budget a writer command opens the store with.
@Suite struct DiskBudgetOptionTests {
    // MARK: - Bad values

    /// Failed before: the option did not exist ("unknown option").
    @Test(arguments: ["0", "-1", "1.5", "2MiB", "", "99999999999999999999"])
    func aBadBudgetIsAUsageError(value: String) throws {
        try withTemporaryDirectory { directory throws in
            let result = try AdminBinary.run(["--store", directory + "/s", "checkpoint", "--max-disk-bytes", value])
            #expect(result.status == 64)
            #expect(result.standardError == "imgstore-admin checkpoint: --max-disk-bytes needs a whole number of bytes greater than 0 (at most \(Int.max)); got '\(value)' (see imgstore-admin --help)\n")
            #expect(!FileManager.default.fileExists(atPath: directory + "/s"), "nothing was created")
        }
    }

    @Test func aBudgetWithADryRunIsAUsageError() throws {
        try withTemporaryDirectory { directory throws in
            let store = directory + "/s"
            try AdminBinary.makeDemoStore(store)
            let result = try AdminBinary.run(["--store", store, "expire", "--dry-run", "--max-disk-bytes", "1000000"])
            #expect(result.status == 64)
            #expect(result.standardError.contains("--dry-run opens the store read-only"))
        }
    }

    // MARK: - Getting out of a full disk

    /// Failed before (unknown option, 64): on a 4 MiB tmpfs (a private mount namespace), puts of
    /// ~90 KB images run until the disk refuses one; then `checkpoint --max-disk-bytes` brings the
    /// store under a 1 MB budget at its open, least recently used first, and puts succeed again.
    /// No entry is removed by hand and none has expired.
    @Test(.enabled(if: Tools.isRoot && Tools.find("unshare") != nil, "needs root and unshare for a private tmpfs mount"))
    func aStoreThatFilledItsDiskIsGotOutOfByTheBudgetOption() throws {
        try withTemporaryDirectory { directory throws in
            let mount = directory + "/mnt"
            try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
            let script = #"""
                mount -t tmpfs -o size=4m tmpfs "$1" || exit 90
                S="$1/s"
                { cat "$2/shapes.png"; head -c 90000 /dev/urandom; } > "$3/big.png" || exit 91
                n=0
                while [ $n -lt 200 ]; do
                  n=$((n + 1))
                  "$ADMIN" --store "$S" put "https://full.test/$n.png" "$3/big.png" > /dev/null 2> "$3/err" || break
                done
                status=0; "$ADMIN" --store "$S" put "https://full.test/more.png" "$3/big.png" > /dev/null 2>> "$3/err" || status=$?
                [ $status -eq 74 ] || { echo "the disk never filled (put $n, then status $status)"; exit 0; }
                grep -q "is full" "$3/err" || echo "the failed put did not say the disk is full: $(cat "$3/err")"
                [ $n -ge 10 ] || echo "only $n puts before the disk was full"
                "$ADMIN" --store "$S" checkpoint --max-disk-bytes 1000000 > /dev/null 2> "$3/err" || echo "checkpoint --max-disk-bytes: status $? ($(cat "$3/err"))"
                "$ADMIN" --store "$S" get "https://full.test/1.png" > /dev/null 2>&1 && echo "the least recently used entry is still there"
                "$ADMIN" --store "$S" get "https://full.test/$((n - 1)).png" > /dev/null 2>&1 || echo "the newest acknowledged entry was evicted too"
                for m in 1 2 3; do
                  "$ADMIN" --store "$S" put --max-disk-bytes 1000000 "https://full.test/after-$m.png" "$3/big.png" > /dev/null 2> "$3/err" || echo "put after the budget: status $? ($(cat "$3/err"))"
                done
                for m in 1 2 3; do
                  "$ADMIN" --store "$S" get "https://full.test/after-$m.png" > "$3/got" || echo "get after-$m: status $?"
                  cmp -s "$3/got" "$3/big.png" || echo "after-$m read back different bytes"
                done
                "$ADMIN" --store "$S" stats --json > "$3/stats" || echo "stats: status $?"
                "$ADMIN" --store "$S" verify > /dev/null || echo "final verify: status $?"
                """#
            let result = try ChildProcess.run("/usr/bin/env", ["unshare", "-m", "/bin/sh", "-c", script, "sh", mount, Fixtures.directory, directory],
                                              environment: ["ADMIN": AdminBinary.path, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"])
            #expect(result.status == 0, "set-up step failed: \(result.standardError)")
            #expect(result.output == "", "\(result.standardError)")
            let stats = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/stats"))) as? [String: Any]
            let occupied = stats?["occupiedBytes"] as? Int ?? .max
            #expect(occupied <= 1_000_000, "\(occupied) bytes of pages, over the budget")
        }
    }
}
