import Foundation
import ImageStore
import Testing

/// A configuration for tests: small map, given clock, and validation off unless asked for
/// (most tests store random bytes).
public func makeConfiguration(
    validation: ImageStore.ValidationPolicy = .none, clock: ManualClock? = nil,
    initialMapSize: Int = 1 << 20, maxMapSize: Int = 1 << 32
) -> ImageStore.Configuration {
    var configuration = ImageStore.Configuration()
    configuration.validation = validation
    configuration.initialMapSize = initialMapSize
    configuration.maxMapSize = maxMapSize
    configuration.logSegmentBytes = 1 << 20
    configuration.sweepPeriod = nil
    if let clock { configuration.clock = clock.source }
    return configuration
}

/// Opens a store in a fresh temporary directory, runs `body`, then checks the store's
/// consistency before closing and deleting it, so every test also checks the invariants.
public func withTemporaryStore<R>(
    _ configuration: ImageStore.Configuration = makeConfiguration(),
    _ body: (ImageStore) throws -> R
) throws -> R {
    try withTemporaryDirectory { directory in
        let store = try ImageStore(path: directory + "/store", configuration: configuration)
        defer { store.close() }
        let result = try body(store)
        try checkConsistency(of: store)
        return result
    }
}

/// Checks what the public API can see of the store's invariants: the counters match the
/// entries, and every entry reads back with a matching checksum.
public func checkConsistency(of store: ImageStore, sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(try store.consistencyProblems() == [], sourceLocation: sourceLocation)
    let entries = try store.entries()
    let stats = try store.statistics()
    #expect(stats.entryCount == entries.count, "entry count counter", sourceLocation: sourceLocation)
    #expect(stats.logicalBytes == entries.reduce(0) { $0 + $1.byteCount }, "logical-bytes counter", sourceLocation: sourceLocation)
    #expect(Set(entries.map(\.url)).count == entries.count, "one entry per URL", sourceLocation: sourceLocation)
    for entry in entries where entry.expiresAt.map({ $0 > store.configuration.clock() }) ?? true {
        let image = try store.get(entry.url)
        #expect(image?.data.count == entry.byteCount, "\(entry.url) reads back whole", sourceLocation: sourceLocation)
    }
}
