#!/usr/bin/env bash
# Runs SeaweedFS S3 servers for the shared tier's tests, on 127.0.0.1 only.
#
#   Tools/s3-server.sh start DIR PORT           one `weed mini` (master, volume, filer, S3 in
#                                               one process); returns once a signed PUT succeeds
#   Tools/s3-server.sh start-cluster DIR PORT   1 master, 3 volume servers (replication 001),
#                                               a filer with S3: separate processes
#   Tools/s3-server.sh stop DIR                 stop whatever DIR runs: SIGTERM, then SIGKILL
#                                               after 5 s, by pid
#
# Ports, mini: master PORT, volume PORT+1, filer PORT+2, S3 PORT+3, admin PORT+4.
# Ports, cluster: master PORT, volumes PORT+1…PORT+3, filer PORT+5, S3 PORT+6.
# Each also takes PORT+10000+n for gRPC, so PORT must be at most 55529.
# Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY when set, else a fixed test pair;
# the bucket is $S3_BUCKET (default "imgstore"). DIR gets ids.json (the identities file), one
# NAME.pid and NAME.log per process (weed, or master, volume-1…3, filer) and the data.
# With S3_SERVER_WATCH_PID set, the servers are also stopped when that process exits (a test
# process that crashes leaves no server behind).
# `weed` is found on PATH (Tools/install-deps.sh links it); curl signs the readiness PUT.
set -euo pipefail

usage() { echo "usage: $0 start|start-cluster DIR PORT | stop DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 dir=$2
key=${AWS_ACCESS_KEY_ID:-imgstore-test-key}
secret=${AWS_SECRET_ACCESS_KEY:-imgstore-test-secret}
bucket=${S3_BUCKET:-imgstore}

stop_pid() {  # stop_pid PID: TERM, KILL after 5 s, wait until gone
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  kill -CONT "$pid" 2>/dev/null || true   # a frozen (SIGSTOP) server cannot act on TERM
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "s3-server: pid $pid still running 5 s after SIGTERM; sending SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}

stop_all() {
  local found=0 pidfile pids=()
  [ -f "$dir/watcher.pid" ] && kill -KILL "$(cat "$dir/watcher.pid")" 2>/dev/null || true
  rm -f "$dir/watcher.pid"
  for pidfile in "$dir"/*.pid; do
    [ -f "$pidfile" ] || continue
    found=1
    pids+=("$(cat "$pidfile")")
  done
  [ "$found" -eq 1 ] || { echo "s3-server: no pid files in $dir; nothing to stop" >&2; return 0; }
  # The filer first, then the rest, all in parallel so the 5 s grace periods overlap.
  for pid in "${pids[@]}"; do stop_pid "$pid" & done
  wait
  rm -f "$dir"/*.pid
}

run() {  # run NAME ARGS...: start `weed ARGS` in the background as NAME
  local name=$1; shift
  weed "$@" >"$dir/$name.log" 2>&1 </dev/null &
  echo $! > "$dir/$name.pid"
}

signed() {  # signed METHOD URL [BODY]: a SigV4-signed request; prints the HTTP status
  curl -s -o /dev/null -w '%{http_code}' --max-time 2 --aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -X "$1" ${3:+--data-binary "$3"} "$2" || true
}

wait_ready() {  # wait_ready S3_URL CREATE_BUCKET: until a signed PUT is stored, at most 30 s
  local s3=$1 create=$2 pidfile
  for _ in $(seq 300); do
    for pidfile in "$dir"/*.pid; do
      if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
        echo "s3-server: $(basename "$pidfile" .pid) exited during start; the end of its log:" >&2
        tail -20 "$dir/$(basename "$pidfile" .pid).log" >&2
        stop_all
        exit 1
      fi
    done
    if [ "$create" = yes ]; then
      case $(signed PUT "$s3/$bucket") in 200|409) create=no ;; esac
    fi
    if [ "$create" = no ] && [ "$(signed PUT "$s3/$bucket/.s3-server-ready" ready)" = 200 ]; then
      echo "s3-server: ready at $s3/$bucket" >&2
      return 0
    fi
    sleep 0.1
  done
  echo "s3-server: no signed PUT succeeded within 30 s; stopping it." >&2
  stop_all
  exit 1
}

start_watcher() {
  [ -n "${S3_SERVER_WATCH_PID:-}" ] || return 0
  local watched=$S3_SERVER_WATCH_PID self=$0
  [ -f "$dir/watcher.pid" ] && kill -KILL "$(cat "$dir/watcher.pid")" 2>/dev/null || true  # a restart's old one
  ( while kill -0 "$watched" 2>/dev/null; do sleep 1; done
    rm -f "$dir/watcher.pid"
    "$self" stop "$dir" ) >/dev/null 2>&1 </dev/null &
  echo $! > "$dir/watcher.pid.tmp"
  mv "$dir/watcher.pid.tmp" "$dir/watcher.pid"
}

check_start() {
  [ $# -eq 3 ] || usage
  port=$3
  [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 55529 ] \
    || { echo "s3-server: PORT must be a number in 1024…55529, got '$port'" >&2; exit 2; }
  command -v weed >/dev/null || { echo "s3-server: weed is not on PATH (run Tools/install-deps.sh)" >&2; exit 3; }
  command -v curl >/dev/null || { echo "s3-server: curl is not on PATH (run Tools/install-deps.sh)" >&2; exit 3; }
  mkdir -p "$dir"
  cat > "$dir/ids.json" <<JSON
{"identities": [{"name": "imgstore", "credentials": [{"accessKey": "$key", "secretKey": "$secret"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
JSON
}

listen=(-ip=127.0.0.1 -ip.bind=127.0.0.1)
case "$cmd" in
  start)
    check_start "$@"
    mkdir -p "$dir/data"
    run weed mini -dir="$dir/data" "${listen[@]}" -s3.config="$dir/ids.json" -bucket="$bucket" -webdav=false \
      -admin.ui=false -s3.port.iceberg=0 -s3.port.lance=0 -master.port="$port" -volume.port=$((port + 1)) \
      -filer.port=$((port + 2)) -s3.port=$((port + 3)) -admin.port=$((port + 4))
    start_watcher
    wait_ready "http://127.0.0.1:$((port + 3))" no
    ;;
  start-cluster)
    check_start "$@"
    mkdir -p "$dir/master" "$dir/volume-1" "$dir/volume-2" "$dir/volume-3" "$dir/filer"
    run master master "${listen[@]}" -port="$port" -port.grpc=$((port + 10000)) -mdir="$dir/master" \
      -defaultReplication=001 -volumeSizeLimitMB=16
    for n in 1 2 3; do
      run "volume-$n" volume "${listen[@]}" -port=$((port + n)) -port.grpc=$((port + 10000 + n)) \
        -dir="$dir/volume-$n" -mserver="127.0.0.1:$port" -max=20
    done
    run filer filer "${listen[@]}" -port=$((port + 5)) -port.grpc=$((port + 10005)) -master="127.0.0.1:$port" \
      -defaultStoreDir="$dir/filer" -defaultReplicaPlacement=001 -s3 -s3.port=$((port + 6)) -s3.port.grpc=$((port + 10006)) \
      -s3.config="$dir/ids.json" -s3.port.iceberg=0 -s3.port.lance=0
    start_watcher
    wait_ready "http://127.0.0.1:$((port + 6))" yes
    ;;
  stop)
    stop_all
    ;;
  *) usage ;;
esac
