import ImageStore

/// `expire [--dry-run]`: sweeps expired entries now.
enum ExpireCommand: AdminCommand {
    static let spec = CommandSpec(
        name: "expire", summary: "Delete every expired entry now (the service's sweeper does this on an interval).",
        arguments: "", options: [OptionSpec(name: "--dry-run", help: "count what would be deleted, delete nothing"), Options.maxDiskBytesOption],
        positional: 0...0, details: "With --dry-run it is a read command: it also works while another process writes to the store.")

    static func run(_ arguments: ParsedArguments, context: CommandContext) throws(CommandFailure) {
        let dryRun = arguments.has("--dry-run")
        if dryRun && context.maxDiskBytes != nil {
            throw ArgumentParser.usage("--max-disk-bytes evicts, and --dry-run opens the store read-only: give one of them")
        }
        let store = try context.openStore(dryRun ? .read : .write)
        let report = try CommandFailure.mapping { () throws(ImageStoreError) in try store.sweepExpired(dryRun: dryRun) }
        context.print(dryRun
            ? "would delete \(report.entryCount) expired entries (\(report.byteCount) bytes)"
            : "deleted \(report.entryCount) expired entries (\(report.byteCount) bytes) in \(report.batches) batch(es)")
    }
}
