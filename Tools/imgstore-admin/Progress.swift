import Foundation

/// A one-line progress indicator on standard error, drawn only when standard error is a
/// terminal (`isatty(2)`), so pipes, logs and tests never see it. Redrawn at most ten times a
/// second; `finish()` erases it.
struct Progress {
    private let label: String
    private let total: Int
    private let enabled = isatty(2) == 1
    private var lastDraw: UInt64 = 0

    init(label: String, total: Int) {
        self.label = label
        self.total = total
    }

    /// Shows that `done` of `total` items are finished and `detail` is being worked on.
    mutating func update(_ done: Int, _ detail: String) {
        guard enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        guard now - lastDraw >= 100_000_000 || done == 0 else { return }
        lastDraw = now
        let shown = detail.count > 60 ? "…" + detail.suffix(59) : detail
        Output.standardError("\r\u{1B}[K\(label) \(done)/\(total) \(shown)")
    }

    /// Erases the line, so what follows starts on a clean line.
    func finish() {
        guard enabled else { return }
        Output.standardError("\r\u{1B}[K")
    }
}
