import Foundation
import ImageStore
import ImageStoreTestSupport
import Locking
import Testing

/// Dropping a store without `close()` does no I/O on the dropping thread.
@Suite struct StoreDeinitTests {
    @Test func droppingAStoreWithoutCloseDoesNoLogIOOnTheDroppingThread() throws {
        try withTemporaryDirectory { directory throws in
            let files = GatedLogFileSystem()  // never holds a write here: it records who does I/O
            // `.none` puts stay queued: the flusher would write them only an hour from now.
            let configuration = LogTest.configuration(durability: .batched(within: .seconds(3600)), fileSystem: files)
            do {
                let store = try ImageStore(path: directory, configuration: configuration)
                try store.put(LogTest.smallEntry(1).data, for: LogTest.smallEntry(1).url, durability: .sync)
                try store.put(LogTest.smallEntry(2).data, for: LogTest.smallEntry(2).url, durability: .none)
                files.io.withLock { $0 = [] }
                _ = store  // the last reference goes at the end of this scope, on this thread
            }
            let me = UInt(pthread_self())
            let here = files.io.withLock { $0.filter { $0.thread == me }.map(\.operation) }
            #expect(here.isEmpty, "the drop did log I/O on the dropping thread: \(here)")

            // What was written (the synced put) is replayed by the next open, once the dropped
            // store's writer queue has let the writer lock go.
            var reopened: ImageStore?
            for _ in 0..<3000 where reopened == nil {
                do { reopened = try ImageStore(path: directory, configuration: LogTest.configuration()) } catch {
                    switch error as? ImageStoreError {
                    case .alreadyOpen?, .writerLocked?: usleep(10_000)
                    default: throw error
                    }
                }
            }
            let store = try #require(reopened, "the dropped store never released its writer lock")
            defer { store.close() }
            #expect(try store.get(LogTest.smallEntry(1).url)?.data == LogTest.smallEntry(1).data)
        }
    }
}
