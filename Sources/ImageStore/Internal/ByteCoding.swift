/// Appends little-endian integers and raw bytes to a growing buffer.
struct ByteWriter {
    private(set) var bytes: [UInt8]

    init(capacity: Int) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ raw: some Sequence<UInt8>) { bytes.append(contentsOf: raw) }

    mutating func appendZeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }
}

/// Reads little-endian integers at fixed offsets of a buffer, bounds-checked.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer

    /// The integer at `offset`, or nil when it does not fit in the buffer.
    func integer<T: FixedWidthInteger>(at offset: Int, as: T.Type = T.self) -> T? {
        guard offset >= 0, offset + MemoryLayout<T>.size <= bytes.count else { return nil }
        return T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }

    /// `count` bytes at `offset` decoded as UTF-8, or nil when out of bounds or invalid.
    func string(at offset: Int, count: Int) -> String? {
        guard offset >= 0, count >= 0, offset + count <= bytes.count else { return nil }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        return String(validating: slice, as: UTF8.self)
    }
}
