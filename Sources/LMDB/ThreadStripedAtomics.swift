import Synchronization
#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif

/// `count` atomic words (`Atomic<Int>`), each on its own cache line, and the one a thread starts at: the layout
/// that lets threads touching "their" atomic at once write different lines.
///
/// Used by the read path's shared structures (`ResizeGate`'s stripes, `ReadTransactionPool`'s
/// slots), where one line that every reader writes would cost more than the work it guards.
///
/// Invariant: the memory is allocated once, at `init`, and never moves until `deinit`; it is
/// only touched through the atomics, so the struct is safe to share between threads.
struct ThreadStripedAtomics: ~Copyable, @unchecked Sendable {
    /// Bytes between two atomics: one cache line on the machines we run on.
    private static var stride: Int { 64 }

    private let base: UnsafeMutableRawPointer
    /// How many atomics there are (at least 1 is allocated, so `home` is always valid).
    let count: Int

    /// `count` atomics, each starting at 0.
    init(count: Int) {
        self.count = count
        base = .allocate(byteCount: Swift.max(count, 1) * Self.stride, alignment: Self.stride)
        for index in 0..<Swift.max(count, 1) {
            (base + index * Self.stride).bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
        }
    }

    deinit {
        base.deallocate()
    }

    /// The atomic at `index` (in `0..<count`).
    func at(_ index: Int) -> UnsafeMutablePointer<Atomic<Int>> {
        (base + index * Self.stride).assumingMemoryBound(to: Atomic<Int>.self)
    }

    /// The index this thread starts at: its thread id, hashed (Fibonacci hashing, so ids that
    /// differ only in their low bits spread), modulo `count`.
    var home: Int {
        #if canImport(Glibc)
        let thread = UInt(pthread_self())
        #else
        let thread = UInt(bitPattern: pthread_self())
        #endif
        return Int(truncatingIfNeeded: (thread &* 0x9E37_79B9_7F4A_7C15) >> 32) % Swift.max(count, 1)
    }

    /// Whether every atomic reads `value` now (a relaxed check, for assertions).
    func all(equal value: Int) -> Bool {
        for index in 0..<count where at(index).pointee.load(ordering: .relaxed) != value { return false }
        return true
    }
}
