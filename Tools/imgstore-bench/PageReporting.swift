import Foundation

/// The guest kernel's free page reporting (virtio-balloon), read from sysfs, so a run's output says how much freed
/// memory the host took back while each case ran.
///
/// On a VM that reports free pages (this Firecracker guest: `page_reporting.page_reporting_order` on its command
/// line), reported pages go to the host to reclaim, and the guest's next touch of a reclaimed page costs a host fault.
/// Rows that fill much new memory (a recovery writing 256 MiB into new page-cache pages, LMDB's malloc'd dirty pages)
/// then run slower than the same code with reporting held off. Measured with `--cases recover.256MiB`, one run each:
/// imgstore's recovery 189 MB/s with `min_free_ms` 0 (the host took back about 3 GiB during the case), 444 MB/s with
/// `min_free_ms` 60000 (6 MiB); raw LMDB's replay 143 and 663 MB/s.
///
/// A case's figure is what was reported while it ran: reporting runs in the background (and after `min_free_ms`), so
/// it is not exactly the memory that case freed.
///
/// Only reads: the benchmark never changes these settings. The counters other than `page_reporting_order` are this
/// VM kernel's own; each is left out of the output where the kernel does not have it.
enum PageReporting {
    static let parameters = "/sys/module/page_reporting/parameters"

    /// KiB of free memory reported to the host since boot; nil where the kernel does not count it.
    static func reportedKiB() -> Int? { parameter("reported_kib").flatMap { Int($0) } }

    /// The settings that decide what is reported and when, as `name value` pairs; nil without page reporting.
    static func settings() -> String? {
        let pairs = ["page_reporting_order", "min_free_ms", "max_waiting_mib"].compactMap { name in
            parameter(name).map { "\(name) \($0)" }
        }
        return pairs.isEmpty ? nil : pairs.joined(separator: ", ")
    }

    /// The trimmed text of one parameter file; nil when it does not exist or cannot be read (no page reporting).
    private static func parameter(_ name: String) -> String? {
        guard let text = try? String(contentsOfFile: parameters + "/" + name, encoding: .utf8) else { return nil }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
