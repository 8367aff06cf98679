#!/usr/bin/env bash
# Builds and runs the ImageValidation libFuzzer target (ASan + libFuzzer), seeded from the shared corpus.
#
#   Tools/fuzz-validator.sh [seconds] [extra libFuzzer flags…]     default 20 s (the CI smoke test)
#
# Byte 0 of each input selects the mode (even = structure, odd = deep); every corpus file is seeded twice.
# Outputs (binary, working corpus, crash artefacts, log) go to fuzz-out/ (gitignored).
# Environment: IMGSTORE_CORPUS (seed images; default <repo>/../shared/corpus); IMGSTORE_FUZZ_MODE=structure or
# deep fuzzes that mode only, with its own working corpus and log in fuzz-out/<mode>/ (run one of each to give
# each mode its own time).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"; shift || true
corpus="${IMGSTORE_CORPUS:-$(pwd)/../shared/corpus}"
bin=fuzz-out/fuzz-validator
out=fuzz-out${IMGSTORE_FUZZ_MODE:+/$IMGSTORE_FUZZ_MODE}
mkdir -p "$out/corpus" "$out/seeds" "$out/artifacts"

if [ ! -d "$corpus" ]; then echo "fuzz-validator: seed corpus not found at $corpus" >&2; exit 1; fi
seeds=0
while IFS= read -r -d '' f; do
  name=$(basename "$f")
  { printf '\x00'; cat "$f"; } > "$out/seeds/s-$name"
  { printf '\x01'; cat "$f"; } > "$out/seeds/d-$name"
  seeds=$((seeds + 2))
done < <(find "$corpus" -type f \( -name '*.png' -o -name '*.jpg' \) -print0)

src=(Sources/ImageValidation/*.swift Tools/fuzz/FuzzValidator.swift)
csrc=(Sources/CImageScan/image_scan.c Sources/CImageScan/include/image_scan.h)
if [ ! -x "$bin" ] || [ -n "$(find "${src[@]}" "${csrc[@]}" -newer "$bin" 2>/dev/null)" ]; then
  echo "fuzz-validator: building $bin"
  Tools/fuzz/build-validator.sh "$bin" ImageValidationFuzz Tools/fuzz/FuzzValidator.swift fuzz
fi

echo "fuzz-validator: $seeds seeds, ${seconds}s"
# -rss_limit_mb: a 4-megapixel deep decode needs well under 512 MB; -timeout: any input over 10 s is a hang.
"$bin" "$out/corpus" "$out/seeds" \
  -max_total_time="$seconds" -rss_limit_mb=1024 -timeout=10 -max_len=65536 \
  -artifact_prefix="$out/artifacts/" -print_final_stats=1 "$@" \
  2>&1 | tee "$out/fuzz.log" | grep -E '#[0-9]+.*(INITED|DONE|pulse|NEW)|ERROR|SUMMARY|stat::|Done' | tail -n 40
status=${PIPESTATUS[0]}
grep -h -o 'cov: [0-9]* ft: [0-9]*' "$out/fuzz.log" | tail -n 1 | sed 's/^/fuzz-validator: final /' || true
exit "$status"
