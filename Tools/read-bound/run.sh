#!/usr/bin/env bash
# Builds and runs read-bound.c (see its header): what bounds get.disk-hit against a file per entry.
# Needs gcc and libxxhash-dev (Tools/install-deps.sh installs both). DIR (default /tmp/read-bound)
# receives 2,048 files and a copy of them as one file, about 300 MB; it is removed afterwards.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-/tmp/read-bound}"
binary="$(mktemp -d)/read-bound"
gcc -O2 -o "$binary" "$here/read-bound.c" -lxxhash
trap 'rm -rf "$dir" "$(dirname "$binary")"' EXIT
"$binary" "$dir"
