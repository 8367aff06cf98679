import Foundation
import Locking
@testable import ImageStore
import ImageStoreTestSupport
import Testing

/// The log's writer on its own: batching, closing, and what waiters are told.
@Suite struct LogWriterTests {
    private static func makeLog(_ directory: String, fileSystem: any LogFileSystem = PosixLogFileSystem(),
                                maxUnappliedBytes: Int = 1 << 40,
                                onWritten: @escaping @Sendable ([SequencedEntry]) -> Void = { _ in }) throws -> WriteAheadLog {
        let options = WriteAheadLog.Options(
            directory: directory, segmentBytes: 64 << 20, maxUnappliedBytes: maxUnappliedBytes,
            batchInterval: 3600, fileSystem: fileSystem)
        // The watermark file on the real file system: the tests watch the segment's writes only.
        let watermark = try SyncedWatermark.open(in: directory, fileSystem: PosixLogFileSystem(), found: nil, appliedSequence: 0)
        return try WriteAheadLog(options: options, firstSegment: 1, nextSequence: 1, watermark: watermark,
                                 onWritten: onWritten, onFailed: { _ in })
    }

    /// Starts a thread whose synced append leads and is held in its write by `gate`; returns
    /// once it is held (the log's leader is then at work).
    private static func startAppendHeldInItsWrite(_ log: WriteAheadLog, gate: GatedLogFileSystem) {
        gate.holdNextWrite()
        Thread { _ = try? log.append(.delete(cacheKey: "a"), durability: .sync) { _ in } }.start()
        gate.waitUntilHeld()
    }

    /// Holds an append in its write (record 1), queues two synced writers behind it (records
    /// 2 and 3), releases the write, and checks that all three records end synced.
    /// - Returns: how often the two woke, and how often they took the log's lock after waking.
    private static func releaseTwoSyncedWritersQueuedBehindAHeldLeader() throws -> (wakeups: Int, relocks: Int) {
        try withTemporaryDirectory { directory throws in
            let gate = GatedLogFileSystem()
            let log = try makeLog(directory, fileSystem: gate)
            let finished = queueTwoSyncedWritersBehindAHeldLeader(log, gate: gate)
            let (wakeupsBefore, relocksBefore) = (log.writerWakeups.load(ordering: .relaxed), log.writerRelocks.load(ordering: .relaxed))
            gate.release()
            #expect(finished.wait(timeout: .now() + 10) == .success)
            #expect(log.status().syncedSequence == 3)
            _ = log.close()
            return (log.writerWakeups.load(ordering: .relaxed) - wakeupsBefore, log.writerRelocks.load(ordering: .relaxed) - relocksBefore)
        }
    }

    /// Starts an append held in its write (record 1), then two synced writers ("b" and "c",
    /// records 2 and 3) that queue behind it; returns once both wait, with the group they leave.
    private static func queueTwoSyncedWritersBehindAHeldLeader(_ log: WriteAheadLog, gate: GatedLogFileSystem) -> DispatchGroup {
        startAppendHeldInItsWrite(log, gate: gate)
        let queued = LockedValue(0)
        let finished = DispatchGroup()
        for key in ["b", "c"] {
            finished.enter()
            Thread {
                _ = try? log.append(.delete(cacheKey: key), durability: .sync) { _ in queued.withLock { $0 += 1 } }
                finished.leave()
            }.start()
        }
        // Each follower publishes under the log's lock and holds it until it waits.
        while queued.withLock({ $0 }) < 2 { usleep(1_000) }
        return finished
    }

    // MARK: - Batches

    @Test func aMillionQueuedRecordsAreWrittenInCappedBatchesWithoutOverflowingTheStack() throws {
        try withTemporaryDirectory { directory throws in
            let batches = LockedValue<[Int]>([])
            let log = try Self.makeLog(directory) { batch in batches.withLock { $0.append(batch.count) } }
            let count = 1_000_000
            for n in 0..<count { try log.append(.delete(cacheKey: "k\(n)"), durability: .none) { _ in } }
            // One flush finds the whole queue: it must not build a million nested closures.
            #expect(try log.flush() == UInt64(count))
            let sizes = batches.withLock { $0 }
            #expect(sizes.reduce(0, +) == count)
            #expect(sizes.max()! <= WriteAheadLog.maxBatchRecords)
            _ = log.close()
        }
    }

    /// The log's leader thread writes only for suspended tasks. While threads do all the
    /// writing, no batch's broadcast may wake it: each wake-up was a context switch per group
    /// commit, for nothing. A task that suspends still gets its record written.
    @Test func theLeaderThreadSleepsThroughGroupCommitsOfThreads() async throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = try Self.makeLog(directory)
        let started = Date()
        let turnsBefore = log.leaderThreadTurns.load(ordering: .relaxed)
        let appends = 200
        for n in 0..<appends { try log.append(.delete(cacheKey: "k\(n)"), durability: .sync) { _ in } }
        let turns = log.leaderThreadTurns.load(ordering: .relaxed) - turnsBefore
        // It wakes once a second without being rung; nothing else may wake it.
        let timeouts = Int(Date().timeIntervalSince(started)) + 2
        #expect(turns <= timeouts, "the leader thread woke \(turns) times for \(appends) group commits")
        let sequence = try await log.appendAsync(.delete(cacheKey: "async"), durability: .sync) { _ in }
        #expect(sequence == UInt64(appends + 1))
        #expect(log.status().syncedSequence >= sequence)
        _ = log.close()
    }

    /// A task resumed because a batch made its record durable returns without taking the log's
    /// lock again to look for a failure: the batch tells it its record got there. Only a task
    /// woken by a failure (or cancelled) looks.
    @Test func aTaskWhoseRecordABatchMadeDurableLeavesWithoutTheLock() async throws {
        let directory = makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gate = GatedLogFileSystem()
        let log = try Self.makeLog(directory, fileSystem: gate)
        Self.startAppendHeldInItsWrite(log, gate: gate)
        let rechecksBefore = log.taskRechecks.load(ordering: .relaxed)
        async let b = log.appendAsync(.delete(cacheKey: "b"), durability: .sync) { _ in }
        async let c = log.appendAsync(.delete(cacheKey: "c"), durability: .batched(within: .seconds(3600))) { _ in }
        // Both park behind the held write before it is let go.
        while log.withLock({ log.state.suspended.waits.count }) < 2 { try await Task.sleep(for: .milliseconds(1)) }
        gate.release()
        let sequences = try await [b, c].sorted()
        #expect(sequences == [2, 3])
        #expect(log.status().syncedSequence == 3)
        let rechecks = log.taskRechecks.load(ordering: .relaxed) - rechecksBefore
        #expect(rechecks == 0, "tasks whose records were written or synced took the log's lock \(rechecks) times to look for a failure")
        _ = log.close()
    }

    /// Memory the applier releases wakes only writers parked in back-pressure: a writer
    /// waiting for its sync is woken by the leader's batch, not by every applied one.
    @Test func theApplierReleasingMemoryDoesNotWakeWritersWaitingForTheirSync() throws {
        try withTemporaryDirectory { directory throws in
            let gate = GatedLogFileSystem()
            let log = try Self.makeLog(directory, fileSystem: gate)
            Self.startAppendHeldInItsWrite(log, gate: gate)
            let queued = LockedValue(false)
            let follower = Thread {
                _ = try? log.append(.delete(cacheKey: "b"), durability: .sync) { _ in queued.withLock { $0 = true } }
            }
            follower.start()
            // The follower publishes under the log's lock and holds it until it waits (on a
            // semaphore of its own, which `released` cannot reach: this guards against a
            // return to waking writers on the log's condition), so the releases come while it waits.
            while !queued.withLock({ $0 }) { usleep(1_000) }
            let wakeupsBefore = log.writerWakeups.load(ordering: .relaxed)
            for _ in 0..<50 {
                log.released(0)
                usleep(1_000)
            }
            let wakeups = log.writerWakeups.load(ordering: .relaxed) - wakeupsBefore
            // Each release woke it when writers waited on the log's condition.
            #expect(wakeups <= 2, "a writer waiting for its sync woke \(wakeups) times for 50 releases")
            gate.release()
            #expect(try log.flush() == 2)
            _ = log.close()
        }
    }

    /// A batch wakes the writers whose records it made durable, and no others: a writer whose
    /// record is still queued sleeps on until a batch covers it. Two writers queued behind a
    /// leader held in its write wake once each: the leader hands their batch off to itself, so
    /// neither has to wake to lead. With every batch's broadcast each could wake twice (four
    /// wake-ups in the run before the change).
    @Test func aBatchWakesOnlyTheWritersWhoseRecordsItMadeDurable() throws {
        let (wakeups, _) = try Self.releaseTwoSyncedWritersQueuedBehindAHeldLeader()
        #expect(wakeups == 2, "two writers woke \(wakeups) times for their one batch")
    }

    /// A writer woken because a batch made its record durable returns without taking the log's
    /// lock again: the leader marks it done before waking it. Woken writers that had to take the
    /// lock queued on the mutex behind the leader, which held it to wake the others and to take
    /// the next batch, and slept there a second time.
    @Test func aWriterWhoseRecordABatchMadeDurableLeavesWithoutTheLock() throws {
        let (_, relocks) = try Self.releaseTwoSyncedWritersQueuedBehindAHeldLeader()
        #expect(relocks == 0, "writers whose records were synced took the log's lock \(relocks) times after waking")
    }

    /// A leader that waits only for its own record to be written leaves once its batch is, and
    /// hands nothing off: a synced writer that queued behind it must be woken to lead its own
    /// record (the flusher, which would write it otherwise, runs once an hour here).
    @Test func aWriterQueuedBehindALeaderThatLeavesIsWokenToLead() throws {
        try withTemporaryDirectory { directory throws in
            let gate = GatedLogFileSystem()
            let log = try Self.makeLog(directory, fileSystem: gate)
            gate.holdNextWrite()
            Thread { _ = try? log.append(.delete(cacheKey: "a"), durability: .batched(within: .seconds(3600))) { _ in } }.start()
            gate.waitUntilHeld()
            let queued = LockedValue(false)
            let finished = DispatchGroup()
            finished.enter()
            Thread {
                _ = try? log.append(.delete(cacheKey: "b"), durability: .sync) { _ in queued.withLock { $0 = true } }
                finished.leave()
            }.start()
            while !queued.withLock({ $0 }) { usleep(1_000) }
            gate.release()
            #expect(finished.wait(timeout: .now() + 30) == .success, "the synced writer still waits: \(log.status())")
            #expect(log.status().syncedSequence == 2)
            _ = log.close()
        }
    }

    /// A smoke test: writers of every durability at once all finish, with the flusher running
    /// once an hour. A writer whose wake-up to lead was lost is rescued by any other thread's
    /// next append, so this catches a lost hand-over only when it strands the last writers;
    /// `aWriterQueuedBehindALeaderThatLeavesIsWokenToLead` pins the hand-over down.
    @Test func writersOfEveryDurabilityAlwaysFindALeader() throws {
        try withTemporaryDirectory { directory throws in
            let log = try Self.makeLog(directory)
            let threads = 8, appends = 400
            let durabilities: [Durability] = [.sync, .batched(within: .seconds(3600)), .background, .sync]
            let failures = LockedValue<[String]>([])
            let finished = DispatchGroup()
            for t in 0..<threads {
                finished.enter()
                Thread {
                    defer { finished.leave() }
                    for n in 0..<appends {
                        do {
                            try log.append(.delete(cacheKey: "t\(t)-\(n)"), durability: durabilities[(t + n) % durabilities.count]) { _ in }
                        } catch {
                            failures.withLock { $0.append("\(error)") }
                        }
                    }
                }.start()
            }
            #expect(finished.wait(timeout: .now() + 120) == .success, "writers still waiting: \(log.status())")
            #expect(failures.withLock { $0 }.isEmpty)
            #expect(try log.flush() == UInt64(threads * appends))
            #expect(log.status().syncedSequence == UInt64(threads * appends))
            _ = log.close()
        }
    }

    // MARK: - Closing

    @Test func anAppendAfterCloseThrowsClosed() throws {
        try withTemporaryDirectory { directory throws in
            let log = try Self.makeLog(directory)
            try log.append(.delete(cacheKey: "a"), durability: .sync) { _ in }
            _ = log.close()
            #expect(throws: ImageStoreError.closed(path: directory)) {
                try log.append(.delete(cacheKey: "b"), durability: .sync) { _ in }
            }
            #expect(throws: ImageStoreError.closed(path: directory)) {
                try log.append(.delete(cacheKey: "c"), durability: .none) { _ in }
            }
        }
    }

    @Test func closeWaitsForTheLeaderBeforeClosingTheFile() throws {
        try withTemporaryDirectory { directory throws in
            let gate = GatedLogFileSystem()
            let log = try Self.makeLog(directory, fileSystem: gate)
            Self.startAppendHeldInItsWrite(log, gate: gate)
            let closer = Thread { _ = log.close() }
            closer.start()
            usleep(50_000)  // gives a close that does not wait the chance to close the file under the write
            gate.release()
            gate.waitUntilClosed()
            #expect(gate.events == ["write", "close"], "the file was closed while the leader still wrote to it")
        }
    }

    @Test func putsRacingCloseEitherSucceedOrThrowClosed() throws {
        for round in 0..<20 {
            try withTemporaryDirectory { directory throws in
                var configuration = LogTest.configuration()
                // Writers then park in back-pressure, where a close finds them.
                configuration.maxUnappliedBytes = 2048
                let store = try ImageStore(path: directory, configuration: configuration)
                let acknowledged = LockedValue<[Int]>([])
                let unexpected = LockedValue<[String]>([])
                let writers = startThreads(3) { thread in
                    for n in 0..<20_000 {
                        let id = thread * 1_000_000 + n
                        do {
                            try store.put(LogTest.smallEntry(id % 50).data, for: "https://x.test/\(id)", durability: .none)
                            acknowledged.withLock { $0.append(id) }
                        } catch ImageStoreError.closed {
                            return
                        } catch {
                            unexpected.withLock { $0.append("\(error)") }
                            return
                        }
                    }
                }
                // Close once the writers are busy: some are then between `checkOpen` and the log.
                while acknowledged.withLock({ $0.count }) < 300 { sched_yield() }
                store.close()
                writers.wait()
                #expect(unexpected.withLock { $0 } == [], "round \(round)")
                // A clean close wrote and applied every acknowledged put, even `.none` ones.
                let reopened = try ImageStore(path: directory, configuration: configuration)
                defer { reopened.close() }
                #expect(reopened.recoveryReport.recordsReplayed == 0, "round \(round)")
                let stored = Set(try reopened.entries().map(\.url))
                let missing = acknowledged.withLock { $0 }.filter { !stored.contains("https://x.test/\($0)") }
                #expect(missing == [], "round \(round): acknowledged puts lost")
            }
        }
    }


    // MARK: - A stopped applier

    @Test func aStoppedApplierWakesEveryWriterParkedInBackPressure() throws {
        try withTemporaryDirectory { directory throws in
            // Nothing releases memory (no applier), so the second writer onwards park.
            let log = try Self.makeLog(directory, maxUnappliedBytes: 1)
            try log.append(.delete(cacheKey: "first"), durability: .sync) { _ in }
            let outcomes = LockedValue<[String]>([])
            let writers = startThreads(4) { n in
                do {
                    try log.append(.delete(cacheKey: "k\(n)"), durability: .sync) { _ in }
                    outcomes.withLock { $0.append("acknowledged") }
                } catch {
                    outcomes.withLock { $0.append("\(error)") }
                }
            }
            let failure = ImageStoreError.storeFull(path: directory, limit: 1)
            log.stop(with: failure)
            #expect(writers.wait(timeout: .now() + 60) == .success, "parked writers never woke")
            #expect(outcomes.withLock { $0 } == Array(repeating: failure.description, count: 4))
            _ = log.close()
        }
    }

}
