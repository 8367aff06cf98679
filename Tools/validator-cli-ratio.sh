#!/usr/bin/env bash
# `imgstore-admin validate --deep` (release build, all cores) against `pngcheck -q` + `jpeginfo -c` over the
# same directory of mixed images; the README's validator section quotes this script's output.
#
#   Tools/validator-cli-ratio.sh [rounds]          default 5; prints the best round of each and the ratio
#   IMGSTORE_ADMIN_BINARY=path Tools/validator-cli-ratio.sh   time that binary instead of building one
#                                                   (a before/after pair, run back to back)
#
# The directory: 48 JPEGs (cjpeg, 4:2:0 and 4:4:4, baseline and progressive, 320x240 to 1280x960) and 24 PNGs
# (ImageMagick, RGB and grey, the same sizes) made from seeded PPM test cards, plus PngSuite's valid files. Each
# reference checker runs once over all its files (its best case: per file it would pay a process start each).
# Needs: swift, python3, cjpeg, convert, pngcheck, jpeginfo (Tools/install-deps.sh). Work files in fuzz-out/ratio/.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-5}"
corpus="${IMGSTORE_CORPUS:-$(pwd)/../shared/corpus}"
work=fuzz-out/ratio
rm -rf "$work"; mkdir -p "$work/images"
admin="${IMGSTORE_ADMIN_BINARY:-}"
if [ -z "$admin" ]; then
  swift build -c release --product imgstore-admin >/dev/null
  admin=.build/release/imgstore-admin
fi

python3 - "$work" <<'PY'
import sys, random
work = sys.argv[1]
sizes = [(320, 240), (640, 480), (1024, 768), (1280, 960)]
for i in range(12):
    w, h = sizes[i % 4]
    rng = random.Random(i)
    noise = bytes(rng.getrandbits(8) >> 4 for _ in range(w * 3))
    rows = []
    for y in range(h):
        rows.append(bytes((((x * 255) // w + noise[(x * 3 + c + y) % len(noise)]) ^ (y * (c + 1))) & 255
                          for x in range(w) for c in range(3)))
    with open(f"{work}/card{i}.ppm", "wb") as f:
        f.write(b"P6\n%d %d\n255\n" % (w, h)); f.write(b"".join(rows))
PY
for i in $(seq 0 11); do
  p="$work/card$i.ppm"
  cjpeg -quality 85 "$p" > "$work/images/c$i-base.jpg"
  cjpeg -quality 90 -progressive "$p" > "$work/images/c$i-prog.jpg"
  cjpeg -quality 80 -sample 1x1 "$p" > "$work/images/c$i-444.jpg"
  cjpeg -quality 75 -optimize -restart 4 "$p" > "$work/images/c$i-rst.jpg"
  convert "$p" "$work/images/c$i-rgb.png"
  convert "$p" -colorspace Gray "$work/images/c$i-grey.png"
done
for f in "$corpus"/pngsuite/[!x]*.png; do cp "$f" "$work/images/"; done
mapfile -t pngs < <(ls "$work"/images/*.png)
mapfile -t jpgs < <(ls "$work"/images/*.jpg)
bytes=$(cat "${pngs[@]}" "${jpgs[@]}" | wc -c)

# Every file must be valid for both, or the comparison times error paths.
pngcheck -q "${pngs[@]}" >/dev/null && jpeginfo -c "${jpgs[@]}" >/dev/null
"$admin" validate --deep "${pngs[@]}" "${jpgs[@]}" >/dev/null

# One timed run: "wall cpu" in seconds (cpu = user + sys of the children, which is all the work here).
timed() {
  local TIMEFORMAT='%R %U %S' out
  out=$( { time "$@" >/dev/null 2>&1; } 2>&1 ) || true
  awk '{ printf "%s %.3f\n", $1, $2 + $3 }' <<<"$out"
}
best() {  # rounds command...: the round with the least wall time
  local n=$1; shift; local b=""
  for _ in $(seq "$n"); do
    local t; t=$(timed "$@")
    if [ -z "$b" ] || awk -v a="${t%% *}" -v c="${b%% *}" 'BEGIN { exit !(a < c) }'; then b=$t; fi
  done
  echo "$b"
}
references() { pngcheck -q "${pngs[@]}"; jpeginfo -c "${jpgs[@]}"; }
ref=$(best "$rounds" references)
ours=$(best "$rounds" "$admin" validate --deep "${pngs[@]}" "${jpgs[@]}")
load=$(cut -d' ' -f1 /proc/loadavg)
echo "files: ${#pngs[@]} PNG + ${#jpgs[@]} JPEG, $bytes bytes; cores: $(nproc); load average at the end: $load"
awk -v r="${ref%% *}" -v rc="${ref##* }" -v o="${ours%% *}" -v oc="${ours##* }" -v b="$bytes" -v cores="$(nproc)" 'BEGIN {
  printf "pngcheck -q + jpeginfo -c          %8.3f s wall %7.3f s CPU  %7.1f MB/s\n", r, rc, b / r / 1e6
  printf "imgstore-admin validate --deep     %8.3f s wall %7.3f s CPU  %7.1f MB/s\n", o, oc, b / o / 1e6
  printf "ratio (reference time / ours)      %8.2fx wall (target >= 1.5x)\n", r / o
  printf "                                   %8.2fx CPU (what a busy machine lets the wall ratio reach)\n", rc / oc
  printf "  on %d otherwise idle cores (CPU-bound, ours split over them): %.2fx\n", cores, rc / (oc / cores) }'
