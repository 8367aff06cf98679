/// Turns a URL string into the canonical form the store keys on (RFC 3986 §6.2.2–6.2.3):
/// scheme and host lowercased, the scheme's default port dropped, an empty HTTP path made
/// `/`, the fragment dropped (it never reaches the server). Everything else — user info,
/// path, query, percent-encoding — is kept byte for byte, because servers may treat those
/// case- or order-sensitively.
///
/// Deliberately strict: a URL with whitespace or control characters, no `scheme://`, an
/// empty host (except `file:`), or a bad port is an error, never silently "fixed".
///
/// `package`: imgstore-admin checks a URL before it creates a store for it.
package struct URLNormalizer: Sendable {
    package let maxBytes: Int

    package init(maxBytes: Int) { self.maxBytes = maxBytes }

    package func normalize(_ url: String) throws(ImageStoreError) -> String {
        // Most URLs a service sees are already in normal form: check that in one pass over the
        // UTF-8 bytes, without allocating, and return the string as it is.
        if url.utf8.count <= maxBytes, url.utf8.withContiguousStorageIfAvailable(Self.isAlreadyNormal) == true {
            return url
        }
        let bytes = Array(url.utf8)
        guard !bytes.isEmpty else { throw .emptyURL }
        guard bytes.count <= maxBytes else { throw .urlTooLong(length: bytes.count, limit: maxBytes) }
        if let bad = bytes.firstIndex(where: { $0 <= 0x20 || $0 == 0x7F }) {
            throw .malformedURL(url: Self.excerpt(url), reason: "it contains a space or control character at byte \(bad)")
        }

        // scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), then "://"
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0,
              Self.isAlpha(bytes[0]),
              bytes[1..<colon].allSatisfy({ Self.isAlpha($0) || Self.isDigit($0) || $0 == 0x2B || $0 == 0x2D || $0 == 0x2E }),
              bytes.count >= colon + 3, bytes[colon + 1] == 0x2F, bytes[colon + 2] == 0x2F
        else {
            throw .malformedURL(url: Self.excerpt(url), reason: "it does not start with a scheme and \"://\" (as in https://host/path)")
        }
        let scheme = bytes[0..<colon].map(Self.lowercased)
        let authorityStart = colon + 3
        let authorityEnd = bytes[authorityStart...].firstIndex(where: { $0 == 0x2F || $0 == 0x3F || $0 == 0x23 }) ?? bytes.count
        let authority = bytes[authorityStart..<authorityEnd]

        // authority = [ userinfo "@" ] host [ ":" port ]
        let at = authority.lastIndex(of: UInt8(ascii: "@"))
        let userInfo = at.map { bytes[authorityStart...$0] } ?? []
        let hostAndPort = bytes[(at.map { $0 + 1 } ?? authorityStart)..<authorityEnd]
        var host = hostAndPort
        var port: ArraySlice<UInt8> = []
        let closingBracket = hostAndPort.lastIndex(of: UInt8(ascii: "]"))
        if let portColon = hostAndPort.lastIndex(of: UInt8(ascii: ":")), portColon > (closingBracket ?? hostAndPort.startIndex - 1) {
            host = bytes[hostAndPort.startIndex..<portColon]
            port = bytes[(portColon + 1)..<hostAndPort.endIndex]
        }
        let schemeName = String(decoding: scheme, as: UTF8.self)
        if host.isEmpty && schemeName != "file" {
            throw .malformedURL(url: Self.excerpt(url), reason: "it has no host")
        }
        if !port.isEmpty {
            guard port.count <= 5, port.allSatisfy(Self.isDigit), let number = Int(String(decoding: port, as: UTF8.self)), number <= 65535 else {
                throw .malformedURL(url: Self.excerpt(url), reason: "its port is not a number from 0 to 65535")
            }
            if Self.defaultPorts[schemeName] == number { port = [] }
        }

        let fragment = bytes[authorityEnd...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.count
        var rest = bytes[authorityEnd..<fragment]
        let isHTTP = schemeName == "http" || schemeName == "https"
        if isHTTP && rest.first != 0x2F { rest = [0x2F] + rest }

        var out = [UInt8]()
        out.reserveCapacity(bytes.count)
        out += scheme
        out += Array("://".utf8)
        out += userInfo
        out += host.map(Self.lowercased)
        if !port.isEmpty { out.append(UInt8(ascii: ":")); out += port }
        out += rest
        return String(decoding: out, as: UTF8.self)
    }

    /// True when `bytes` is a URL `normalize` would return unchanged, by a conservative rule:
    /// a lowercase scheme, then `://`, an authority of lowercase host characters with no user
    /// info or port, a path starting with `/`, no fragment, and no space or control character.
    /// Anything else takes the full path.
    private static func isAlreadyNormal(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let count = bytes.count
        guard count > 0, bytes[0] >= 0x61, bytes[0] <= 0x7A else { return false }
        while index < count, bytes[index] != 0x3A {  // scheme up to ":"
            guard isMember(bytes[index], low: schemeLow, high: schemeHigh) else { return false }
            index += 1
        }
        guard index + 3 < count, bytes[index + 1] == 0x2F, bytes[index + 2] == 0x2F else { return false }
        index += 3
        let hostStart = index
        while index < count, bytes[index] != 0x2F {  // authority up to "/": only lowercase host characters
            guard isMember(bytes[index], low: hostLow, high: hostHigh) else { return false }
            index += 1
        }
        guard index > hostStart, index < count else { return false }  // a host, and a path starting with "/"
        // The path and query, most of a URL's bytes: eight at a time, then the tail one by one.
        let base = UnsafeRawPointer(bytes.baseAddress!)
        while index + 8 <= count {
            if hasPathStopByte(base.loadUnaligned(fromByteOffset: index, as: UInt64.self)) { return false }
            index += 8
        }
        while index < count {
            let b = bytes[index]
            if b <= 0x20 || b == 0x7F || b == 0x23 { return false }  // control, space, or a fragment
            index += 1
        }
        return true
    }

    // The fast path's byte sets as bitmaps, bit b of `…Low` for byte b below 64 and bit b - 64
    // of `…High` for bytes 64 to 127: a lowercase scheme (`a-z 0-9 + - .`) and a lowercase host
    // (`a-z 0-9 - . _`).
    private static let schemeLow: UInt64 = 0x03FF_6800_0000_0000, schemeHigh: UInt64 = 0x07FF_FFFE_0000_0000
    private static let hostLow: UInt64 = 0x03FF_6000_0000_0000, hostHigh: UInt64 = 0x07FF_FFFE_8000_0000

    /// Whether ASCII byte `b` is in the set `low` and `high` describe: one shift and test where
    /// a chain of comparisons branched on every byte.
    @inline(__always)
    private static func isMember(_ b: UInt8, low: UInt64, high: UInt64) -> Bool {
        b < 128 && ((b < 64 ? low : high) >> UInt64(b & 63)) & 1 != 0
    }

    /// Whether any of the eight bytes in `word` is a control character or space (`<= 0x20`),
    /// DEL (`0x7F`) or `#` (`0x23`): the bytes that end `isAlreadyNormal`'s path scan. Exact,
    /// not an estimate: a borrow in these subtractions starts only at a byte that matches, so
    /// without one no high bit is set (bytes of 0x80 and up are masked by `~word`).
    private static func hasPathStopByte(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ v: UInt64) -> UInt64 { (v &- ones) & ~v & highs }
        let below21 = (word &- ones &* 0x21) & ~word & highs
        return below21 | hasZeroByte(word ^ (ones &* 0x7F)) | hasZeroByte(word ^ (ones &* 0x23)) != 0
    }

    private static let defaultPorts = ["http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21]

    private static func isAlpha(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }
    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
    private static func lowercased(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }

    /// The start of a long URL, for error messages that stay one line.
    package static func excerpt(_ url: String) -> String {
        url.utf8.count <= 200 ? url : String(url.prefix(200)) + "… (\(url.utf8.count) bytes)"
    }
}
