#!/usr/bin/env python3
"""Summarises a `perf script` dump recorded by run.sh: syncs, block requests, device busy time, gaps between syncs.

A block request is charged to the sync whose thread issued it (a sync writes its own dirty pages back); flushes are
counted apart. Requests of 8 KiB or less are "single pages" (B-tree pages, inodes); an "M" in the request's flags
marks file-system metadata (on ext4 without a journal, the inode an fdatasync writes when the extent map or size
changed).
"""
import collections
import re
import statistics
import sys

LINE = re.compile(r'^\s*(.+?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$')


class Descriptor:
    def __init__(self):
        self.syncs = 0
        self.seconds = 0.0
        self.threads = set()
        self.bytes = 0
        self.requests = 0
        self.single_pages = 0
        self.metadata = 0
        self.intervals = []


def parse(path):
    descriptors = collections.defaultdict(Descriptor)
    in_sync = {}  # thread -> (start, fd)
    in_flight = {}  # sector -> (issued at, bytes)
    busy = 0.0
    last_change = None
    first_issue = last_complete = None
    for line in open(path, errors="replace"):
        match = LINE.match(line)
        if not match:
            continue
        _, thread, _, stamp, event, rest = match.groups()
        at = float(stamp)
        if event in ("syscalls:sys_enter_fdatasync", "syscalls:sys_enter_fsync"):
            in_sync[thread] = (at, int(rest.split("fd:")[1].strip(), 16))
        elif event in ("syscalls:sys_exit_fdatasync", "syscalls:sys_exit_fsync"):
            if thread in in_sync:
                start, fd = in_sync.pop(thread)
                d = descriptors[fd]
                d.syncs += 1
                d.seconds += at - start
                d.threads.add(thread)
                d.intervals.append((start, at))
        elif event in ("block:block_rq_issue", "block:block_rq_complete"):
            fields = rest.split()
            flags = fields[1]
            if flags.startswith("FF"):
                continue  # a flush: no sector, no data
            if in_flight and last_change is not None:
                busy += at - last_change
            last_change = at
            if event == "block:block_rq_issue":
                size, sector = int(fields[2]), fields[4]
                in_flight[sector] = (at, size)
                first_issue = first_issue if first_issue is not None else at
                if thread in in_sync:
                    d = descriptors[in_sync[thread][1]]
                    d.requests += 1
                    d.bytes += size
                    d.single_pages += size <= 8192
                    d.metadata += "M" in flags
            else:
                in_flight.pop(fields[3], None)
                last_complete = at
    return descriptors, busy, first_issue, last_complete


def main():
    descriptors, busy, first, last = parse(sys.argv[1])
    if first is None:
        sys.exit("analyse.py: no block requests in the trace")
    span = last - first
    print(f"trace: {span:.2f} s; the device had a request in flight {busy:.2f} s ({busy / span:.0%})")
    print(f"{'fd':>4} {'threads':>7} {'syncs':>6} {'mean µs':>8} {'MiB':>8} {'requests':>8} {'single pages':>12} {'metadata':>8}")
    ranked = sorted(descriptors.items(), key=lambda item: -item[1].syncs)
    for fd, d in ranked:
        if d.syncs < 10:
            continue
        print(f"{fd:>4} {len(d.threads):>7} {d.syncs:>6} {d.seconds / d.syncs * 1e6:>8.0f} {d.bytes / 2**20:>8.1f}"
              f" {d.requests:>8} {d.single_pages:>12} {d.metadata:>8}")
    fd, most = ranked[0]
    spans = sorted(most.intervals)
    gaps = [b[0] - a[1] for a, b in zip(spans, spans[1:]) if 0 <= b[0] - a[1] < 0.05]
    if gaps:
        print(f"fd {fd}: between one sync's end and the next one's start: mean {statistics.mean(gaps) * 1e6:.0f} µs,"
              f" median {statistics.median(gaps) * 1e6:.0f} µs (gaps over 50 ms, between runs, left out)")


if __name__ == "__main__":
    main()
