/// Where a memory-tier fill is when it calls `Configuration.memoryFillHook` (tests only).
package enum MemoryFillPhase: Sendable, Hashable {
    /// LMDB was read; nothing is inserted yet.
    case beforeInsert
    /// The insert step is done (it inserted the entry or withdrew it); `fill` returns next.
    case afterInsert
}
