/// SigV4's URI encoding (RFC 3986): every byte of the UTF-8 form except the unreserved
/// `A-Z a-z 0-9 - . _ ~` becomes `%XY` with upper-case hex. One function for the canonical
/// request and the URL actually sent, so the two can never disagree.
package enum AWSPercentEncoding {
    /// `text` encoded for a query name or value: `/`, `=`, `&`, space and `+` are encoded too.
    package static func encode(_ text: String) -> String {
        encode(text, keepingSlash: false)
    }

    /// An object key's path, encoded segment by segment: `/` stays as it is (S3 does not
    /// double-encode, unlike the other services' canonical URIs).
    package static func encodePath(_ path: String) -> String {
        encode(path, keepingSlash: true)
    }

    private static func encode(_ text: String, keepingSlash: Bool) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for byte in text.utf8 {
            if isUnreserved(byte) || (keepingSlash && byte == UInt8(ascii: "/")) {
                out.append(byte)
            } else {
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0f)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}
