import Foundation

/// Calls `operation` (`bind` or `connect`) for socket `fd` with the address 127.0.0.1:`port`;
/// returns what it returns (0, or -1 with `errno` set). The one place tests build that address.
public func withLoopbackAddress(
    port: Int, _ fd: Int32, _ operation: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32
) -> Int32 {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { operation(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}
