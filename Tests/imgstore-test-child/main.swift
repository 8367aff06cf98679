import Foundation
import ImageStore
import LMDB

// A second process for tests that need one. Each action does one thing to a store, prints
// "ready" when it is in place (and "acked …" lines for writes the store acknowledged), and
// then waits to be killed:
//
//   imgstore-test-child hold-reader DIR             begin an LMDB read transaction on DIR
//   imgstore-test-child hold-writer DIR             open DIR as the store's writer
//   imgstore-test-child hold-open DIR               open DIR's LMDB environment, idle (no transaction)
//   imgstore-test-child hold-read-only DIR          open DIR as a read-only store, idle
//   imgstore-test-child read-loop DIR COUNT
//        open DIR read-only, check entries 0..<COUNT of `put` (twice) and that the open data
//        file was not replaced, close, again until killed, printing "round N" after each; on
//        a wrong or missing entry or a replaced file print "bad …" and exit 1
//   imgstore-test-child stall-in-write DIR          open DIR as the store's writer and stay inside
//        an LMDB write transaction (the test stops it there with SIGSTOP)
//   imgstore-test-child try-writer DIR              open DIR as the writer; print the outcome and exit
//   imgstore-test-child make DIR COUNT SEED         create a store of COUNT entries, checkpoint, exit
//   imgstore-test-child read-each DIR COUNT SEED    read (read-only) each entry `make` wrote, print
//        "N ok", "N missing", "N wrong" or "N error KIND" per entry, then "done"; exits 3 when
//        the store cannot be opened at all
//   imgstore-test-child nested-reads DIR ROUNDS     while a thread puts 128 KB images (the store
//        grows), call every public read inside forEachEntry's body (for 27 anchors), ROUNDS times; print
//        "round N" after each and "done" at the end
//   imgstore-test-child put DIR COUNT MODE [keep-log]
//        put COUNT entries (MODE: sync, batched, none); with keep-log, nothing is applied to
//        LMDB, so everything stays in the write-ahead log
//   imgstore-test-child put-forever DIR THREADS MODE SEED
//        put entries from THREADS threads until killed, printing "acked URL SIZE CHECKSUM"
//   imgstore-test-child churn DIR THREADS MODE KEYS
//        overwrite KEYS entries over and over from THREADS threads until killed (the store stays
//        small while its log rolls and checkpoints); prints "ready" once the first put is acked
//   imgstore-test-child power-loss DIR WORKLOAD MODE SEED
//        the power-loss test's writer (`PowerLossWorkload.swift`); runs until killed
//   imgstore-test-child pool-heartbeat DIR SECONDS WRITERS SYNC_DELAY_MS MODE
//        the pool-limited test's workload (`PoolHeartbeat.swift`)
//   imgstore-test-child inspect DIR
//        opens DIR with the default configuration, prints "entry URL CHECKSUM" for each entry
//        it reads back whole, "problem …" for what verify finds, then closes it and exits
//
// Entry n's bytes are deterministic (`blob(n, seed)`), and every "acked" line carries the
// bytes' XXH3, which the store's entry info reports back, so the parent can check contents.

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

func blob(_ n: Int, seed: UInt64) -> Data {
    var state = seed &+ UInt64(n) &* 0x9E37_79B9_7F4A_7C15
    let size = 200 + Int(state % 20_000)
    var bytes = [UInt8](repeating: 0, count: size)
    for i in 0..<size {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes[i] = UInt8(truncatingIfNeeded: state >> 33)
    }
    return Data(bytes)
}

func durability(_ name: String) -> Durability {
    switch name {
    case "batched": .batched(within: .milliseconds(50))
    case "none": .none
    default: .sync
    }
}

func open(_ directory: String, keepLog: Bool = false, readOnly: Bool = false) throws -> ImageStore {
    var configuration = ImageStore.Configuration()
    configuration.readOnly = readOnly
    configuration.validation = .none
    configuration.logSegmentBytes = 256 << 10
    configuration.initialMapSize = 1 << 20
    configuration.applyLog = !keepLog
    return try ImageStore(path: directory, configuration: configuration)
}

/// Where this process's descriptors point (`/proc/self/fd`), as "FD:TARGET".
func openFiles() -> [String] {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return fds.compactMap { fd in (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)).map { "\(fd):" + $0 } }
}

/// The URL of entry `n` of a store `make` created.
func madeURL(_ n: Int) -> String { "https://damage.test/images/\(n).bin" }

func hang() -> Never {
    while true { sleep(60) }
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch (arguments.first, arguments.count) {
    case ("hold-reader", 2):
        let environment = try Environment.open(path: arguments[1])
        try environment.read { _ in
            say("ready")
            hang()
        }
    case ("hold-open", 2):
        let environment = try Environment.open(path: arguments[1])
        say("ready")
        withExtendedLifetime(environment) { hang() }
    case ("hold-read-only", 2):
        let store = try open(arguments[1], readOnly: true)
        say("ready")
        withExtendedLifetime(store) { hang() }
    case ("read-loop", 3):
        // Descriptors inherited from the parent are not this process's to judge.
        let inherited = Set(openFiles().map { $0.prefix { $0 != ":" } })
        say("ready")
        for round in 0... {
            do {  // the store is released (its environment closed) at the end of this block
                let store = try open(arguments[1], readOnly: true)
                for pass in 0..<2 {
                    for n in 0..<Int(arguments[2])! {
                        guard try store.get("https://x.test/\(n)")?.data == blob(n, seed: 1) else {
                            say("bad entry \(n) in round \(round)")
                            exit(1)
                        }
                    }
                    if pass == 0 { usleep(5000) }  // stays open a moment too
                }
                // A data file renamed away while it is open shows as "data.mdb (deleted)".
                let own = openFiles().filter { !inherited.contains($0.prefix { $0 != ":" }) }
                if let replaced = own.first(where: { $0.hasSuffix("data.mdb (deleted)") }) {
                    say("bad: reading a replaced file, \(replaced), in round \(round)")
                    exit(1)
                }
                store.close()
            }
            say("round \(round)")
            usleep(100_000)  // leaves the store closed for a moment, so a compaction can get in (also under load)
        }
    case ("hold-writer", 2):
        let store = try open(arguments[1])
        say("ready")
        withExtendedLifetime(store) { hang() }
    case ("make", 4):
        let store = try open(arguments[1])
        let seed = UInt64(arguments[3])!
        for n in 0..<Int(arguments[2])! {
            try store.put(blob(n, seed: seed), for: madeURL(n), expiry: .after(.seconds(86_400)), durability: .storeDefault)
        }
        try store.checkpoint()
        store.close()
    case ("read-each", 4):
        var configuration = ImageStore.Configuration()
        configuration.readOnly = true
        let store: ImageStore
        do { store = try ImageStore(path: arguments[1], configuration: configuration) } catch {
            say("unopenable: \(error)")
            exit(3)
        }
        let seed = UInt64(arguments[3])!
        for n in 0..<Int(arguments[2])! {
            do {
                switch try store.get(madeURL(n), allowingStale: true) {
                case nil: say("\(n) missing")
                case let image?: say("\(n) \(image.data == blob(n, seed: seed) ? "ok" : "wrong")")
                }
            } catch {
                say("\(n) error \(Mirror(reflecting: error).children.first?.label ?? "\(error)")")
            }
        }
        say("done")
    case ("nested-reads", 3):
        let store = try open(arguments[1])
        for n in 0..<30 { try store.put(blob(n, seed: 2), for: "https://x.test/anchor/\(n)", durability: .none) }
        Thread.detachNewThread {
            for n in 0..<300 {  // about 38 MB: the map of the store's first days grew several times
                _ = try? store.put(Data(repeating: UInt8(truncatingIfNeeded: n), count: 128 << 10), for: "https://x.test/grow/\(n)", durability: .none)
            }
        }
        for round in 0..<Int(arguments[2])! {
            try store.forEachEntry { (info) throws(ImageStoreError) in
                if !info.url.contains("/anchor/") || info.url.hasSuffix("0") { return }  // only the anchors are read from
                _ = try store.get(info.url, allowingStale: true)
                _ = try store.info(for: info.url)
                _ = try store.contains(info.url)
                _ = try store.statistics()
                _ = try store.entries()
                _ = try store.quarantinedEntries()
                _ = try store.sweepExpired(dryRun: true)
                try store.forEachEntry { _ in }
                _ = store.recoveryReport
                _ = store.logStatus
            }
            _ = try store.verify()
            say("round \(round)")
        }
        say("done")
        exit(0)
    case ("stall-in-write", 2):
        let store = try open(arguments[1])
        // The registry hands back the store's own environment: this is the store's writer
        // transaction as an import's batch would hold it.
        try Environment.open(path: arguments[1]).write { _ in
            say("ready")
            withExtendedLifetime(store) { hang() }
        }
    case ("try-writer", 2):
        do {
            let store = try open(arguments[1])
            store.close()
            say("opened")
        } catch let error as ImageStoreError {
            if case .writerLocked = error { say("writerLocked: \(error)") } else { say("error: \(error)") }
        }
    case ("put", 4), ("put", 5):
        let store = try open(arguments[1], keepLog: arguments.count == 5)
        for n in 0..<Int(arguments[2])! {
            let info = try store.put(blob(n, seed: 1), for: "https://x.test/\(n)", durability: durability(arguments[3]))
            say("acked \(info.url) \(info.byteCount) \(info.checksum)")
        }
        say("ready")
        withExtendedLifetime(store) { hang() }
    case ("put-forever", 5):
        let store = try open(arguments[1])
        let mode = durability(arguments[3])
        let seed = UInt64(arguments[4])!
        say("ready")
        DispatchQueue.concurrentPerform(iterations: Int(arguments[2])!) { thread in
            var n = 0
            while true {
                let key = thread * 1_000_000 + n
                let url = "https://x.test/\(seed)/\(key)"
                if let info = try? store.put(blob(key, seed: seed), for: url, durability: mode) {
                    say("acked \(info.url) \(info.byteCount) \(info.checksum)")
                }
                n += 1
            }
        }
    case ("churn", 5):
        let store = try open(arguments[1])
        let mode = durability(arguments[3])
        let keys = Int(arguments[4])!
        try store.put(blob(0, seed: 3), for: "https://x.test/churn/0", durability: .sync)
        say("ready")
        DispatchQueue.concurrentPerform(iterations: Int(arguments[2])!) { thread in
            for n in (thread * 7)... {
                _ = try? store.put(blob(n, seed: 3), for: "https://x.test/churn/\(n % keys)", durability: mode)
            }
        }
    case ("inspect", 2):
        let store = try ImageStore(path: arguments[1])
        for entry in try store.entries() {
            guard let image = try store.get(entry.url), image.data.count == entry.byteCount else {
                say("problem \(entry.url) is listed but does not read back whole")
                continue
            }
            say("entry \(entry.url) \(image.info.checksum)")
        }
        for problem in try store.verify().unrepaired { say("problem \(problem)") }
        store.close()
    case ("pool-heartbeat", 6):
        try poolHeartbeat(directory: arguments[1], seconds: Int(arguments[2])!, writers: Int(arguments[3])!,
                          syncDelay: Int(arguments[4])!, mode: arguments[5])
    case ("power-loss", 5):
        var workload = PowerLossWorkload(directory: arguments[1], mode: arguments[3], seed: UInt64(arguments[4])!)
        workload.run(arguments[2])
    default:
        FileHandle.standardError.write(Data("usage: see Tests/imgstore-test-child/main.swift\n".utf8))
        exit(64)
    }
} catch {
    FileHandle.standardError.write(Data("imgstore-test-child: \(error)\n".utf8))
    exit(1)
}
