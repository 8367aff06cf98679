import Foundation

/// Starts `count` dedicated threads running `body(index)` and returns a group to wait on.
///
/// Dedicated threads rather than `DispatchQueue.global()`: GCD runs only about as many busy
/// blocks as there are cores, so on a 2-core machine spinning readers of one test can keep
/// another test's readers from ever starting.
public func startThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(index)
            group.leave()
        }
    }
    return group
}
