import Foundation
import ImageStoreTestSupport
import Testing

/// A store that fills its own disk can be got out of with the tool alone.
@Suite struct FullDiskTests {
    /// On a 4 MiB tmpfs (a private mount namespace), puts of ~90 KB images (a PNG with trailing bytes) run until the
    /// disk refuses one; then every read command works, `rm` and `expire` free space, and puts
    /// succeed again. Fails on a store without a space reserve: after the disk filled, every
    /// command that opens the store as its writer said the disk was full.
    @Test(.enabled(if: Tools.isRoot && Tools.find("unshare") != nil, "needs root and unshare for a private tmpfs mount"))
    func aStoreThatFilledItsDiskIsGotOutOfWithTheToolAlone() throws {
        try withTemporaryDirectory { directory throws in
            let mount = directory + "/mnt"
            try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
            let script = #"""
                mount -t tmpfs -o size=4m tmpfs "$1" || exit 90
                S="$1/s"
                { cat "$2/shapes.png"; head -c 90000 /dev/urandom; } > "$3/big.png" || exit 91
                "$ADMIN" --store "$S" put "https://full.test/keep.png" "$3/big.png" > /dev/null || exit 92
                n=0
                while [ $n -lt 200 ]; do
                  n=$((n + 1))
                  "$ADMIN" --store "$S" put --ttl 1 "https://full.test/$n.png" "$3/big.png" > /dev/null 2> "$3/err" || break
                done
                status=0; "$ADMIN" --store "$S" put "https://full.test/more.png" "$3/big.png" > /dev/null 2>> "$3/err" || status=$?
                [ $status -eq 74 ] || { echo "the disk never filled (put $n, then status $status)"; exit 0; }
                grep -q "is full" "$3/err" || echo "the failed put did not say the disk is full: $(cat "$3/err")"
                [ $n -ge 10 ] || echo "only $n puts before the disk was full"
                for command in "ls" "get https://full.test/keep.png" "verify" "stats" "rm https://full.test/keep.png"; do
                  "$ADMIN" --store "$S" $command > /dev/null 2> "$3/err" || echo "$command: status $? ($(cat "$3/err"))"
                done
                sleep 1.1  # the rest (TTL 1 s) has expired: expire deletes it
                for command in "rm https://full.test/2.png" "expire" "verify"; do
                  "$ADMIN" --store "$S" $command > /dev/null 2> "$3/err" || echo "$command: status $? ($(cat "$3/err"))"
                done
                for m in 1 2 3; do
                  "$ADMIN" --store "$S" put "https://full.test/after-$m.png" "$3/big.png" > /dev/null 2> "$3/err" || echo "put after freeing space: status $? ($(cat "$3/err"))"
                done
                "$ADMIN" --store "$S" get "https://full.test/after-3.png" > "$3/got" || echo "get after: status $?"
                cmp -s "$3/got" "$3/big.png" || echo "the last put read back different bytes"
                "$ADMIN" --store "$S" verify > /dev/null || echo "final verify: status $?"
                """#
            let result = try ChildProcess.run("/usr/bin/env", ["unshare", "-m", "/bin/sh", "-c", script, "sh", mount, Fixtures.directory, directory],
                                              environment: ["ADMIN": AdminBinary.path, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"])
            #expect(result.status == 0, "set-up step failed: \(result.standardError)")
            #expect(result.output == "", "\(result.standardError)")
        }
    }
}
