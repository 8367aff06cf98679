import Foundation
import ImageStore

/// `readers [--clear]`: LMDB's reader table, like `mdb_stat -r` (and `-rr`).
enum ReadersCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "readers", summary: "List LMDB's reader slots; --clear frees those of dead processes.",
        arguments: "",
        options: [OptionSpec(name: "--clear", help: "clear the slots of processes that no longer exist (mdb_reader_check)")],
        positional: 0...0,
        details: """
            One line per slot: pid, thread, the snapshot it reads (- between transactions), and
            "stale" when its process is gone. A stale slot pins an old snapshot, so the file grows
            instead of reusing pages. The store clears them at open and at every sweep; --clear
            does it now. Neither takes the writer lock, unless the last writer stopped without
            closing and none holds it: then, as any read-only open, it restores the last checkpoint
            first (or waits for a starting writer to).
            """)

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let path = context.storePath
        // As every read command: a missing store is 66 and nothing is created. A path that is
        // not a directory is said as the store says it (it would call it "not an imgstore store").
        try context.requireStore()
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw CommandFailure(storeError: .notADirectory(path: path))
        }
        if arguments.has("--clear") {
            let cleared = try CommandFailure.mapping { () throws(ImageStoreError) in try ImageStore.clearStaleReaders(path: path) }
            context.print("cleared \(cleared) stale reader slot\(cleared == 1 ? "" : "s")")
        }
        let slots = try CommandFailure.mapping { () throws(ImageStoreError) in try ImageStore.readerSlots(path: path) }
        guard !slots.isEmpty else { return context.print("no reader slots in use") }
        context.print("pid        thread           snapshot")
        for slot in slots {
            let line = String(slot.pid).padding(toLength: 10, withPad: " ", startingAt: 0) + " "
                + slot.thread.padding(toLength: 16, withPad: " ", startingAt: 0) + " "
                + (slot.transaction.map(String.init) ?? "-")
            context.print(line + (slot.isStale ? "  stale" : ""))
        }
    }
}
