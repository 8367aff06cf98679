#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Tells ThreadSanitizer about `Synchronization.Mutex`, which it cannot see on Linux.
///
/// On Linux `Mutex` is a futex word driven by atomics inside the (uninstrumented) standard library, so TSan observes
/// no happens-before edge between one thread's unlock and the next thread's lock, and reports every access to the
/// guarded state as a race (a false positive; the same code is clean with a pthread mutex). When the TSan runtime is
/// present (`swift test --sanitize=thread`), each shard therefore announces "release" before unlocking and
/// "acquire" after locking, on its own address. In a normal build the symbols are absent, the function pointers are
/// `nil`, and the cost is one predictable branch per operation.
@usableFromInline
struct ThreadSanitizerAnnotations: Sendable {
    @usableFromInline typealias Annotation = @convention(c) (UnsafeMutableRawPointer?) -> Void

    @usableFromInline let acquire: Annotation?
    @usableFromInline let release: Annotation?

    init() {
        #if os(Linux)
        // RTLD_DEFAULT (null on glibc): search the executable and every loaded library; the sanitizer runtime
        // exports these symbols.
        let all = UnsafeMutableRawPointer(bitPattern: 0)
        acquire = dlsym(all, "__tsan_acquire").map { unsafeBitCast($0, to: Annotation.self) }
        release = dlsym(all, "__tsan_release").map { unsafeBitCast($0, to: Annotation.self) }
        #else
        // Elsewhere `Mutex` is built on a lock TSan intercepts (os_unfair_lock on Darwin).
        acquire = nil
        release = nil
        #endif
    }
}
