#!/usr/bin/env bash
# The load beside the benchmark's "loaded" runs (README, "Benchmarks"): from-scratch debug builds of a clone of this
# repository, one after another, until the file STOP exists. Start it, wait until the first build compiles (about
# 30 s), run the benchmark, then `touch STOP`; the loop ends after the build in progress (the clone is kept until
# the next start removes it).
#
#   Tools/load-loop.sh [STOP] [CLONE]    (defaults /tmp/imgstore-load.stop and /tmp/imgstore-load-clone)
#
# `nice -n 19` applies to `swift build` itself; its compilers were seen at nice 0 (ps), and when started from the same
# session as the benchmark they share its scheduler autogroup, so the load competes at full priority.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
stop="${1:-/tmp/imgstore-load.stop}"
clone="${2:-/tmp/imgstore-load-clone}"
rm -f "$stop"
rm -rf "$clone"
git clone -q "$here" "$clone"
cd "$clone"
while [ ! -e "$stop" ]; do
    rm -rf .build
    nice -n 19 swift build > /dev/null 2>&1 || true  # a failed build is load too; the loop only stops on STOP
done
