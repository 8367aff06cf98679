#!/usr/bin/env bash
# The power-loss test at full length: stores on loop-mounted ext4 and xfs images, power cut
# with `xfs_io -x -c shutdown` at random moments of puts and removes in each durability mode,
# of store creation, of checkpoints and of compaction; every store must reopen without
# salvage, verify clean, and keep what its mode promised
# (Tests/ImageStoreTests/PowerLoss/PowerLossTests.swift). CI runs 10 cuts per case as part of
# `swift test`; this runs as many as asked (default 100) per case and file system, and prints
# each case's seed and figures. Needs root.
#
#   Tools/power-loss.sh [cuts]          IMGSTORE_SEED=<n> replays a case's cut moments and ops
set -euo pipefail
cd "$(dirname "$0")/.."
cuts="${1:-100}"
[ "$(id -u)" -eq 0 ] || { echo "power-loss.sh: needs root (it loop-mounts file-system images)" >&2; exit 2; }
./Tools/install-deps.sh
swift build --build-tests
log=$(mktemp)
set +e
IMGSTORE_POWER_CUTS="$cuts" swift test --skip-build --filter 'PowerLossTests' >"$log" 2>&1
status=$?
set -e
grep -E '^PowerLossTests |✘|↳' "$log" || true
tail -n 1 "$log"
echo "full log: $log"
exit "$status"
