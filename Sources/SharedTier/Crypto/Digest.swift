import CCrypto
import Foundation

/// The hashes the shared tier needs, all from libcrypto: SHA-256 (SigV4 payload and request
/// hashes, object keys, body checksums), HMAC-SHA-256 (the SigV4 signing key and signature)
/// and MD5 (`Content-MD5`). Every libcrypto call in the module is in this file.
///
/// libcrypto fails these one-shot calls only when it cannot allocate a context; that traps,
/// as any other allocation failure does.
package enum Digest {
    /// The SHA-256 of `data` (32 bytes).
    package static func sha256(_ data: some DataProtocol) -> [UInt8] {
        evp(Array(data), EVP_sha256(), size: 32)
    }

    /// The MD5 of `data` (16 bytes), for `Content-MD5` only: never as a checksum of ours.
    package static func md5(_ data: some DataProtocol) -> [UInt8] {
        evp(Array(data), EVP_md5(), size: 16)
    }

    /// HMAC-SHA-256 of `message` under `key` (32 bytes).
    package static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                out.withUnsafeMutableBufferPointer { outBytes in
                    HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count),
                         messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count,
                         outBytes.baseAddress, &length)
                }
            }
        }
        // Invariant: HMAC returns its output buffer, filled with one SHA-256 digest.
        precondition(result != nil && length == 32, "libcrypto HMAC-SHA-256 failed")
        return out
    }

    /// Lower-case hex of `bytes`, as SigV4 and the object keys spell digests.
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func evp(_ data: [UInt8], _ type: OpaquePointer?, size: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: size)
        var length: UInt32 = 0
        let ok = data.withUnsafeBytes { input in
            out.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, type, nil)
            }
        }
        // Invariant: a one-shot digest fills exactly the algorithm's output size.
        precondition(ok == 1 && Int(length) == size, "libcrypto EVP_Digest failed")
        return out
    }
}
