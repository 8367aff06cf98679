#!/usr/bin/env bash
# The write-ahead log's crash test at full length: a child process puts images from 4 threads
# and prints each acknowledged URL; it is SIGKILLed at random moments, the store is reopened,
# and every acknowledged image must be there byte for byte. CI runs 8 cycles per mode as part
# of `swift test`; this runs as many as asked (default 200) for both sync and batched modes.
#
#   Tools/crash-stress.sh [cycles]        IMGSTORE_SEED=<n> replays a run
set -euo pipefail
cd "$(dirname "$0")/.."
cycles="${1:-200}"
IMGSTORE_CRASH_CYCLES="$cycles" swift test --filter 'CrashTests/everyAcknowledgedPutSurvivesKillMinusNine'
