@testable import LMDB
import Testing

/// Where a transaction's pages are mapped comes from /proc/self/maps (see `MapBounds`). Data
/// files on two fresh tmpfs mounts have the same inode number; a store that took the other's
/// mapping read every page as damaged (StoreFullDiskTests and StoreFullDiskRecoveryTests,
/// failing together when run side by side, 2026-12-01).
@Suite struct MapStartTests {
    private let maps = """
        7f0000000000-7f0100000000 r--s 00000000 00:2e 3 /tmp/x/a/store/data.mdb
        7f0200000000-7f0300000000 r--s 00000000 00:2f 3 /tmp/x/b/store/data.mdb
        7f0400000000-7f0400001000 rw-s 00000000 00:2f 4 /tmp/x/b/store/lock.mdb
        """

    @Test func theMappingOfTheDataFilesOwnDeviceIsChosen() {
        // st_dev of 00:2f is 0x2f; of a device with a major and a large minor, both parts count.
        #expect(Environment.mapStart(inMaps: maps, device: 0x2f, inode: 3, length: 1 << 32) == 0x7f02_0000_0000)
        #expect(Environment.mapStart(inMaps: maps, device: 0x2e, inode: 3, length: 1 << 32) == 0x7f00_0000_0000)
        let split = "7f0000000000-7f0100000000 r--s 00000000 103:12345 9 /x/data.mdb"
        let device: UInt64 = (0x103 << 8) | (0x45) | (0x123 << 20)
        #expect(Environment.mapStart(inMaps: split, device: device, inode: 9, length: 1 << 32) == 0x7f00_0000_0000)
    }

    @Test func noMappingOrTwoCandidatesGiveNoBounds() {
        #expect(Environment.mapStart(inMaps: maps, device: 0x30, inode: 3, length: 1 << 32) == nil)
        #expect(Environment.mapStart(inMaps: maps, device: 0x2f, inode: 3, length: 1 << 20) == nil)
        let twice = maps + "\n7f0500000000-7f0600000000 r--s 00000000 00:2f 3 /tmp/x/b/store/data.mdb (deleted)"
        #expect(Environment.mapStart(inMaps: twice, device: 0x2f, inode: 3, length: 1 << 32) == nil)
    }
}
