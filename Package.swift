// swift-tools-version:6.0
import PackageDescription

/// A system library from a Debian -dev package, found through pkg-config.
/// `Tools/install-deps.sh` installs every one of them.
func systemLibrary(_ name: String, pkgConfig: String, apt: String) -> Target {
    .systemLibrary(name: name, pkgConfig: pkgConfig, providers: [.apt([apt])])
}

let package = Package(
    name: "imgstore",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "ImageStore", targets: ["ImageStore"]),
        .library(name: "ImageValidation", targets: ["ImageValidation"]),
        .library(name: "MemoryCache", targets: ["MemoryCache"]),
        .library(name: "SharedTier", targets: ["SharedTier"]),
        .executable(name: "imgstore-admin", targets: ["imgstore-admin"]),
        .executable(name: "imgstore-bench", targets: ["imgstore-bench"]),
    ],
    targets: [
        // MARK: - C libraries (Debian packages)
        systemLibrary("CLMDB", pkgConfig: "lmdb", apt: "liblmdb-dev"),
        systemLibrary("CXXHash", pkgConfig: "libxxhash", apt: "libxxhash-dev"),
        systemLibrary("CZlib", pkgConfig: "zlib", apt: "zlib1g-dev"),
        systemLibrary("CDeflate", pkgConfig: "libdeflate", apt: "libdeflate-dev"),
        systemLibrary("CSpng", pkgConfig: "spng", apt: "libspng-dev"),
        systemLibrary("CTurboJPEG", pkgConfig: "libturbojpeg", apt: "libturbojpeg0-dev"),
        systemLibrary("CSQLite", pkgConfig: "sqlite3", apt: "libsqlite3-dev"),
        systemLibrary("CCrypto", pkgConfig: "libcrypto", apt: "libssl-dev"),

        // MARK: - Modules
        .target(name: "Locking"),
        // LMDB calls guarded against faults on damaged pages: one C file, so its per-thread
        // state has one copy whichever module the calls are inlined into.
        .target(name: "CLMDBGuard", dependencies: ["CLMDB"]),
        .target(name: "LMDB", dependencies: ["CLMDB", "CLMDBGuard", "CXXHash", "Locking"]),
        // The validator's JPEG entropy-data scan: vector code chosen at run time (AVX-512BW, AVX2, SSE2).
        .target(name: "CImageScan"),
        .target(name: "CFileSystem"),
        // A copy with streaming stores, for the bytes of a disk read the memory tier keeps.
        .target(name: "CStreamingCopy"),
        .target(name: "ImageValidation", dependencies: ["CZlib", "CDeflate", "CSpng", "CTurboJPEG", "CImageScan"]),
        .target(name: "MemoryCache"),
        .target(name: "ImageStore", dependencies: ["LMDB", "CXXHash", "ImageValidation", "MemoryCache", "Locking", "CFileSystem", "CStreamingCopy"]),
        // The shared tier on S3-compatible storage (issue 18): SigV4 over libcrypto, an S3 client.
        // It conforms to ImageStore's `ImageLoaderSharedTier`; ImageStore knows nothing of S3.
        .target(name: "SharedTier", dependencies: ["CCrypto", "Locking", "ImageStore"]),

        // MARK: - Tools
        .executableTarget(name: "imgstore-admin", dependencies: ["ImageStore", "SharedTier"], path: "Tools/imgstore-admin"),
        .executableTarget(
            name: "imgstore-bench",
            dependencies: [
                "ImageStore", "LMDB", "CLMDB", "CSQLite", "MemoryCache", "ImageValidation", "CTurboJPEG", "CZlib", "SharedTier",
            ],
            path: "Tools/imgstore-bench",
            exclude: ["README.md", "last-full-run.txt"]
        ),

        // MARK: - Tests
        .target(name: "ImageStoreTestSupport", dependencies: ["ImageStore", "Locking"], path: "Tests/ImageStoreTestSupport",
                exclude: ["test_server.py"]),
        .executableTarget(
            name: "imgstore-test-child", dependencies: ["LMDB", "ImageStore"], path: "Tests/imgstore-test-child"),
        .testTarget(name: "LMDBTests", dependencies: ["LMDB", "ImageStoreTestSupport", "imgstore-test-child"]),
        .testTarget(name: "ImageValidationTests", dependencies: ["ImageValidation", "CImageScan", "ImageStoreTestSupport"]),
        .testTarget(name: "MemoryCacheTests", dependencies: ["MemoryCache", "ImageStoreTestSupport"]),
        .testTarget(
            name: "ImageStoreTests",
            dependencies: ["ImageStore", "ImageStoreTestSupport", "LMDB", "Locking", "CXXHash", "CStreamingCopy", "imgstore-test-child"]),
        // One host of a fleet in its own process (the fleet test starts several).
        .executableTarget(
            name: "imgstore-loader-child", dependencies: ["ImageStore", "SharedTier"], path: "Tests/imgstore-loader-child"),
        // A real SeaweedFS per test (Tools/s3-server.sh), for the tier's tests and the tool's.
        .target(name: "SharedTierTestSupport", dependencies: ["SharedTier", "ImageStoreTestSupport", "Locking"],
                path: "Tests/SharedTierTestSupport"),
        .testTarget(
            name: "SharedTierTests",
            dependencies: ["SharedTier", "SharedTierTestSupport", "ImageStoreTestSupport", "Locking", "imgstore-loader-child"],
            exclude: ["Fixtures"]),
        .testTarget(name: "ImgstoreAdminTests", dependencies: ["ImageStore", "ImageStoreTestSupport", "SharedTierTestSupport", "SharedTier", "imgstore-admin"]),
    ],
    swiftLanguageModes: [.v6]
)
