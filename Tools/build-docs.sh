#!/usr/bin/env bash
# Builds the DocC documentation of the public modules (ImageStore, ImageValidation, MemoryCache)
# with the toolchain's own docc, no SwiftPM plugin: the compiler emits symbol graphs while it
# builds (`-emit-symbol-graph`), and `docc convert` turns each module's graphs, and its catalog
# (Sources/MODULE/MODULE.docc) when it has one, into a .doccarchive under OUTPUT.
#
# Fails on any docc warning but missing parameter or return documentation: a link to a symbol
# or article that does not resolve (``ImageStore/metrics``, <doc:…>) is an error. The build uses
# its own scratch directory (.build/docs), so the flags never invalidate the main build's cache.
#
# Usage: Tools/build-docs.sh [OUTPUT]     (default .build/docs/site)
set -euo pipefail
cd "$(dirname "$0")/.."
output=${1:-.build/docs/site}
graphs="$PWD/.build/docs/symbol-graphs"
mkdir -p "$graphs" "$output"
# Not cleared between runs: an incremental build re-emits only the modules it recompiles.
swift build --scratch-path .build/docs --target ImageStore \
  -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs"

status=0
for module in ImageStore ImageValidation MemoryCache; do
  input=$(mktemp -d)
  cp "$graphs/$module.symbols.json" "$input/"
  cp "$graphs/$module"@*.symbols.json "$input/" 2>/dev/null || true  # extensions of other modules' types
  catalog=()
  if [ -d "Sources/$module/$module.docc" ]; then catalog=("Sources/$module/$module.docc"); fi
  diagnostics="$input/diagnostics.json"
  docc convert "${catalog[@]}" --additional-symbol-graph-dir "$input" \
    --output-path "$output/$module.doccarchive" --fallback-display-name "$module" \
    --fallback-bundle-identifier "org.imgstore.$module" --diagnostics-file "$diagnostics" >/dev/null
  python3 - "$module" "$diagnostics" <<'PY' || status=1
import json, sys
module, path = sys.argv[1], sys.argv[2]
# Gaps in parameter and return documentation are reported, not fatal; everything else is.
tolerated = ("is missing documentation",)
fatal, noted = [], []
for d in json.load(open(path))["diagnostics"]:
    where = "%s:%s" % (d.get("source", "?").replace("file://", ""), d.get("range", {}).get("start", {}).get("line", "?"))
    line = "%s: %s: %s" % (where, d["severity"], d["summary"])
    (noted if d["severity"] not in ("error",) and any(t in d["summary"] for t in tolerated) else fatal).append(line)
for line in noted: print("build-docs: note: " + line)
for line in fatal: print("build-docs: " + line, file=sys.stderr)
print("build-docs: %s: %d problem(s), %d documentation gap(s)" % (module, len(fatal), len(noted)))
sys.exit(1 if fatal else 0)
PY
  rm -rf "$input"
done
exit $status
