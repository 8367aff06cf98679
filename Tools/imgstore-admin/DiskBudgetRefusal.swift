import ImageStore

extension CommandFailure {
    /// A put refused because the disk budget (`--max-disk-bytes`) would evict it as soon as it
    /// was applied (`ImageStoreError.entryOverDiskBudget`), said in the tool's terms: 74, as a
    /// full disk's refusal (`noRoomForWrite`) is, since the image is fine and the store cannot
    /// take it.
    init(overDiskBudget byteCount: Int, needed: Int, limit: Int, maxDiskBytes: Int) {
        let percent = Int((ImageStore.Configuration().diskBudgetLowWatermark * 100).rounded())
        self.init(code: .ioError, message: "The image is \(byteCount) bytes and would take \(needed) bytes of pages with the store's own, over the \(limit) bytes (\(percent)% of --max-disk-bytes \(maxDiskBytes)) that the budget evicts the store down to, so it would be evicted at once. Nothing was stored or evicted; give a larger --max-disk-bytes or a smaller image.")
    }
}
