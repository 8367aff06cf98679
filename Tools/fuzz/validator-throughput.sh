#!/usr/bin/env bash
# Throughput of ImageValidation (release build, in-process) against the reference checkers over the corpus.
#
#   Tools/fuzz/validator-throughput.sh [seconds-per-mode]      default 3
#
# Reports files/s and MB/s for structure and deep mode (in-process calls, the probe loops over the files held in
# memory), and for `pngcheck -q`, `jpeginfo`, `jpeginfo -c` run as one process per file (what a user of those
# tools pays per image) and as one process over all files (their best case). Work files in fuzz-out/.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-3}"
corpus="${IMGSTORE_CORPUS:-$(pwd)/../shared/corpus}"
probe=fuzz-out/validator-probe
mkdir -p fuzz-out
Tools/fuzz/build-validator.sh "$probe" ValidatorProbe Tools/fuzz/ValidatorProbe.swift

mapfile -t pngs < <(find "$corpus" -name '*.png' | sort)
mapfile -t jpgs < <(find "$corpus" -name '*.jpg' | sort)
bytes() { cat "$@" | wc -c; }
now() { date +%s.%N; }
rate() {  # label files bytes start end
  awk -v l="$1" -v n="$2" -v b="$3" -v s="$4" -v e="$5" \
    'BEGIN { t = e - s; printf "%-28s %10.0f files/s %9.2f MB/s %10.1f µs/file\n", l, n / t, b / t / 1e6, t / n * 1e6 }'
}

echo "== ImageValidation, in-process (all ${#pngs[@]} PNG + ${#jpgs[@]} JPEG files)"
"$probe" --bench "$seconds" "${pngs[@]}" "${jpgs[@]}"
echo "== ImageValidation, PNG only"
"$probe" --bench "$seconds" "${pngs[@]}"
echo "== ImageValidation, JPEG only"
"$probe" --bench "$seconds" "${jpgs[@]}"

echo "== reference tools"
pb=$(bytes "${pngs[@]}"); jb=$(bytes "${jpgs[@]}")
reps=5
s=$(now); for _ in $(seq $reps); do for f in "${pngs[@]}"; do pngcheck -q "$f" >/dev/null 2>&1 || true; done; done; e=$(now)
rate "pngcheck -q (process/file)" $((reps * ${#pngs[@]})) $((reps * pb)) "$s" "$e"
s=$(now); for _ in $(seq $reps); do pngcheck -q "${pngs[@]}" >/dev/null 2>&1 || true; done; e=$(now)
rate "pngcheck -q (one process)" $((reps * ${#pngs[@]})) $((reps * pb)) "$s" "$e"
reps=50
for flags in "" "-c"; do
  s=$(now); for _ in $(seq $reps); do for f in "${jpgs[@]}"; do jpeginfo $flags "$f" >/dev/null 2>&1 || true; done; done; e=$(now)
  rate "jpeginfo $flags (process/file)" $((reps * ${#jpgs[@]})) $((reps * jb)) "$s" "$e"
  s=$(now); for _ in $(seq $reps); do jpeginfo $flags "${jpgs[@]}" >/dev/null 2>&1 || true; done; e=$(now)
  rate "jpeginfo $flags (one process)" $((reps * ${#jpgs[@]})) $((reps * jb)) "$s" "$e"
done
