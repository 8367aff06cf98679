#!/usr/bin/env bash
# Builds and runs read-bound.c (see its header), with imgstore's streaming copy: what bounds get.disk-hit against a file per entry.
# Needs gcc and libxxhash-dev (Tools/install-deps.sh installs both). DIR (default /tmp/read-bound)
# receives 2,048 files and a copy of them as one file, about 300 MB; it is removed afterwards.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-/tmp/read-bound}"
binary="$(mktemp -d)/read-bound"
sources="$here/../../Sources/CStreamingCopy"
gcc -O2 -I "$sources/include" -o "$binary" "$here/read-bound.c" "$sources/streaming_copy.c" -lxxhash
trap 'rm -rf "$dir" "$(dirname "$binary")"' EXIT
"$binary" "$dir"
