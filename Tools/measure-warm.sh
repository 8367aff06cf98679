#!/usr/bin/env bash
# Issue 18 §4: the time to warm a new host with N images (default 10000) from the shared tier,
# against fetching them from a local origin that answers each request after LATENCY ms
# (default 20). Both run CONCURRENCY requests at once (default 8, the tools' default).
#
# usage: Tools/measure-warm.sh [N] [LATENCY_MS] [CONCURRENCY]
# Needs the release imgstore-admin (swift build -c release --product imgstore-admin, or
# $IMGSTORE_ADMIN_BINARY), weed (Tools/install-deps.sh) and python3. Everything listens on
# 127.0.0.1 and is stopped on exit.
#
# Steps, each timed: host A fetches the N URLs from the origin (the cold path); A's store is
# exported to the tier (export --to-shared-tier); host B warms from the tier (warm
# --shared-tier); host C loads the N URLs through the loader with the tier (fetch
# --shared-tier: every load a shared hit, the origin untouched).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-10000}
latency=${2:-20}
concurrency=${3:-8}
admin=${IMGSTORE_ADMIN_BINARY:-$PWD/.build/release/imgstore-admin}
[ -x "$admin" ] || { echo "no $admin: run swift build -c release --product imgstore-admin" >&2; exit 1; }
work=$(mktemp -d)
export AWS_ACCESS_KEY_ID=measure-key AWS_SECRET_ACCESS_KEY=measure-secret S3_BUCKET=imgstore
export S3_SERVER_WATCH_PID=$$
port=${S3_PORT:-23410}
origin_pid=
cleanup() {
  Tools/s3-server.sh stop "$work/s3" >/dev/null 2>&1 || true
  [ -n "$origin_pid" ] && kill "$origin_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/s3"
Tools/s3-server.sh start "$work/s3" "$port" >/dev/null
tier="http://127.0.0.1:$((port + 3))/imgstore"
python3 Tools/latency-origin.py Tests/Fixtures --latency-ms "$latency" > "$work/origin.txt" &
origin_pid=$!
for _ in $(seq 100); do grep -q '^port' "$work/origin.txt" 2>/dev/null && break; sleep 0.05; done
origin="http://127.0.0.1:$(awk '/^port/ {print $2}' "$work/origin.txt")"
fixtures=(photo-baseline.jpg photo-progressive.jpg gray-restart.jpg gradient-rgb.png palette-16.png shapes.png gray-alpha.png)
urls=()
for i in $(seq "$count"); do urls+=("$origin/n/$i/${fixtures[$((i % ${#fixtures[@]}))]}"); done

now() { date +%s.%N; }
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
requests() { curl -s "$origin/_count"; }

start=$(now)
"$admin" --store "$work/a" fetch --concurrency "$concurrency" "${urls[@]}" > "$work/a.txt"
origin_time=$(seconds "$start" "$(now)")
origin_requests=$(requests)

start=$(now)
"$admin" --store "$work/a" export --to-shared-tier "$tier" --concurrency "$concurrency"
export_time=$(seconds "$start" "$(now)")

start=$(now)
"$admin" --store "$work/b" warm --shared-tier "$tier" --concurrency "$concurrency"
warm_time=$(seconds "$start" "$(now)")

start=$(now)
"$admin" --store "$work/c" fetch --concurrency "$concurrency" --shared-tier "$tier" "${urls[@]}" > "$work/c.txt"
shared_time=$(seconds "$start" "$(now)")
shared_lines=$(grep -c '^shared ' "$work/c.txt" || true)
after=$(requests)

entries_b=$("$admin" --store "$work/b" ls | wc -l)
echo
echo "$count images, origin latency ${latency} ms, $concurrency requests at once, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-44s %8s s  %s\n' "fetch from the origin (host A)" "$origin_time" "$origin_requests origin requests"
printf '%-44s %8s s\n' "export --to-shared-tier (A -> tier)" "$export_time"
printf '%-44s %8s s  %s entries; %.1fx faster than the origin\n' "warm --shared-tier (host B)" "$warm_time" "$entries_b" \
  "$(awk -v o="$origin_time" -v w="$warm_time" 'BEGIN { print o / w }')"
printf '%-44s %8s s  %s shared hits, %s origin requests\n' "fetch --shared-tier (host C)" "$shared_time" "$shared_lines" \
  "$((after - origin_requests))"
