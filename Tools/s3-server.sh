#!/usr/bin/env bash
# Runs a single-node SeaweedFS S3 server (`weed mini`) for the shared tier's tests, on
# 127.0.0.1 only.
#
#   Tools/s3-server.sh start DIR PORT   start it in DIR; returns once a signed PUT succeeds
#   Tools/s3-server.sh stop  DIR        stop it: SIGTERM, then SIGKILL after 5 s, by pid
#
# Ports: master PORT, volume PORT+1, filer PORT+2, S3 PORT+3, admin PORT+4; SeaweedFS also
# opens the gRPC ports PORT+10000 … PORT+10004. PORT must be at most 55530.
# Credentials: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY when set, else a fixed test pair;
# the bucket is $S3_BUCKET (default "imgstore"). DIR gets ids.json (the identities file),
# weed.pid, weed.log and the data. `weed` is found on PATH (Tools/install-deps.sh links it).
# Needs curl (its --aws-sigv4 signs the readiness PUT).
set -euo pipefail

usage() { echo "usage: $0 start DIR PORT | stop DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 dir=$2

stop_server() {
  local pidfile="$dir/weed.pid"
  [ -f "$pidfile" ] || { echo "s3-server: no $pidfile; nothing to stop" >&2; return 0; }
  local pid; pid=$(cat "$pidfile")
  if kill -TERM "$pid" 2>/dev/null; then
    kill -CONT "$pid" 2>/dev/null || true   # a frozen (SIGSTOP) server cannot act on TERM
    for _ in $(seq 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "s3-server: pid $pid still running 5 s after SIGTERM; sending SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    fi
  fi
  rm -f "$pidfile"
}

case "$cmd" in
  start)
    [ $# -eq 3 ] || usage
    port=$3
    [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 55530 ] \
      || { echo "s3-server: PORT must be a number in 1024…55530, got '$port'" >&2; exit 2; }
    command -v weed >/dev/null || { echo "s3-server: weed is not on PATH (run Tools/install-deps.sh)" >&2; exit 3; }
    command -v curl >/dev/null || { echo "s3-server: curl is not on PATH (run Tools/install-deps.sh)" >&2; exit 3; }
    mkdir -p "$dir/data"
    key=${AWS_ACCESS_KEY_ID:-imgstore-test-key}
    secret=${AWS_SECRET_ACCESS_KEY:-imgstore-test-secret}
    bucket=${S3_BUCKET:-imgstore}
    cat > "$dir/ids.json" <<JSON
{"identities": [{"name": "imgstore", "credentials": [{"accessKey": "$key", "secretKey": "$secret"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
JSON
    weed mini -dir="$dir/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.config="$dir/ids.json" \
      -bucket="$bucket" -webdav=false -admin.ui=false -s3.port.iceberg=0 -s3.port.lance=0 \
      -master.port="$port" -volume.port=$((port + 1)) -filer.port=$((port + 2)) \
      -s3.port=$((port + 3)) -admin.port=$((port + 4)) >"$dir/weed.log" 2>&1 &
    echo $! > "$dir/weed.pid"
    s3="http://127.0.0.1:$((port + 3))"
    # Ready means a signed PUT is stored, not just an open port: the filer and a volume must be up.
    for _ in $(seq 300); do
      if ! kill -0 "$(cat "$dir/weed.pid")" 2>/dev/null; then
        echo "s3-server: weed exited during start; the end of $dir/weed.log:" >&2
        tail -20 "$dir/weed.log" >&2
        rm -f "$dir/weed.pid"
        exit 1
      fi
      if curl -sf -o /dev/null --max-time 2 --aws-sigv4 "aws:amz:us-east-1:s3" --user "$key:$secret" \
           -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -X PUT --data-binary ready \
           "$s3/$bucket/.s3-server-ready"; then
        echo "s3-server: ready at $s3/$bucket (pid $(cat "$dir/weed.pid"))" >&2
        exit 0
      fi
      sleep 0.1
    done
    echo "s3-server: no signed PUT succeeded within 30 s; stopping it. The end of $dir/weed.log:" >&2
    tail -20 "$dir/weed.log" >&2
    stop_server
    exit 1
    ;;
  stop)
    stop_server
    ;;
  *) usage ;;
esac
