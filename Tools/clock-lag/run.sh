#!/usr/bin/env bash
# Builds and runs clock-lag.c (see its header): how far the coarse wall clock lags the precise
# one, and what each costs to read. Needs gcc (Tools/install-deps.sh installs it). Runs in about
# 10 s; run it beside a build for a loaded figure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
binary="$(mktemp -d)/clock-lag"
trap 'rm -rf "$(dirname "$binary")"' EXIT
gcc -O2 -o "$binary" "$here/clock-lag.c"
"$binary"
