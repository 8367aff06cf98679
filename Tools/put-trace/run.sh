#!/usr/bin/env bash
# Traces one put.sync row of imgstore-bench at the block layer, to see where a put system's time on the disk goes.
#
#   Tools/put-trace/run.sh SYSTEM [THREADS]     # e.g. imgstore 16, or log+lmdb-io-bound 16
#
# Runs `imgstore-bench --cases put.sync --systems SYSTEM --put-threads THREADS` (the image mix, three runs) under
# `perf record -a` of the fdatasync/fsync syscalls and the block layer's request issue and completion, stops the
# recording when the mix's runs end (before put.sync.small), and prints `analyse.py`'s summary: per file descriptor
# the syncs, their mean time and the requests they issued (single pages, metadata), the device's busy time, and the
# gaps between the syncs of the most-synced descriptor (the log's, for the log-based systems).
# Needs root (system-wide tracepoints), perf (Debian's linux-perf) and python3; build the release bench first:
# `swift build -c release --product imgstore-bench`. Writes into DIR (default /tmp/put-trace), kept for perf script.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
system="${1:?usage: run.sh SYSTEM [THREADS]}"
threads="${2:-16}"
dir="${DIR:-/tmp/put-trace}"
bench="$here/../../.build/release/imgstore-bench"
[ -x "$bench" ] || { echo "run.sh: build it first: swift build -c release --product imgstore-bench" >&2; exit 2; }
command -v perf >/dev/null || { echo "run.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
mkdir -p "$dir"
name="$(echo "$system" | tr -c 'A-Za-z0-9\n' '_')-$threads"
events=syscalls:sys_enter_fdatasync,syscalls:sys_exit_fdatasync,syscalls:sys_enter_fsync,syscalls:sys_exit_fsync
events+=,block:block_rq_issue,block:block_rq_complete
perf record -q -a -o "$dir/$name.data" -e "$events" 2>"$dir/$name.perf.log" &
recorder=$!
sleep 1
"$bench" --cases put.sync --systems "$system" --put-threads "$threads" >"$dir/$name.out" 2>"$dir/$name.err" &
bench_pid=$!
# The mix's rows end where put.sync.small starts: stop there, so the trace holds the mix only.
while kill -0 "$bench_pid" 2>/dev/null && ! grep -q "running put.sync.small" "$dir/$name.err"; do sleep 0.1; done
kill -INT "$recorder"
wait "$recorder" || true
kill "$bench_pid" 2>/dev/null || true
wait "$bench_pid" 2>/dev/null || true
# The mix's lines only: what the bench printed before put.sync.small began.
sed '/running put.sync.small/q' "$dir/$name.err" | grep -E "runs of|fsyncs of|group commits" || true
perf script -i "$dir/$name.data" 2>/dev/null >"$dir/$name.txt"
python3 "$here/analyse.py" "$dir/$name.txt"
