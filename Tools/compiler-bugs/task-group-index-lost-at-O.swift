// Swift 6.3.1, x86_64 Linux: `swiftc -O` loses a child task's captured `index` across the
// `try await` inside the tuple `(index, .success(try await load(url)))` when the `do` block
// has a typed throw (`do throws(LoadError)`). Expected output: [0, 1, 2, 3].
//   swiftc -Onone task-group-index-lost-at-O.swift -o /tmp/repro && /tmp/repro   -> [0, 1, 2, 3]
//   swiftc -O     task-group-index-lost-at-O.swift -o /tmp/repro && /tmp/repro   -> [0, 0, 0, 0], exit 1
// With untyped `throws`, or with the await bound to a local before the tuple is built, -O is right.
// This is why `imgstore-admin fetch` with several URLs trapped in release builds (issue 14 §1):
// `FetchCommand.loadAll` awaits each load into a local first. Standalone, no imgstore code; not
// part of any SwiftPM target. Checked with Swift 6.3.1 (swift-6.3.1-RELEASE), Debian 12, x86_64.
import Foundation

enum LoadError: Error { case empty }

func load(_ url: String) async throws(LoadError) -> String {
    try? await Task.sleep(for: .milliseconds(1))
    if url.isEmpty { throw .empty }
    return url
}

func indices(_ urls: [String]) async -> [Int] {
    await withTaskGroup(of: (Int, Result<String, LoadError>).self) { group in
        for (index, url) in urls.enumerated() {
            group.addTask {
                do throws(LoadError) { return (index, .success(try await load(url))) } catch {
                    return (index, .failure(error))
                }
            }
        }
        var seen: [Int] = []
        for await (index, _) in group { seen.append(index) }
        return seen.sorted()
    }
}

let seen = await indices(["a", "b", "c", "d"])
print(seen)
exit(seen == [0, 1, 2, 3] ? 0 : 1)
