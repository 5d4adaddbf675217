#!/bin/sh
# Run one mode of reads_bounded.py against a fresh copy of a loaded data directory.
#   reads_bounded.sh BINARY DATA_DIR TOKEN_FILE MODE SECS [serve flags...]
# DATA_DIR is copied (the service's own writes never touch it); the service is stopped after.
set -eu
bin=$1 data=$2 token=$3 mode=$4 secs=$5; shift 5
work=$(mktemp -d); cp -r "$data" "$work/data"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve --data-dir "$work/data" --token-file "$token" --listen 127.0.0.1:$port "$@" >"$work/log" 2>&1 &
pid=$!
until curl -sf "127.0.0.1:$port/healthz" >/dev/null; do sleep 0.5; done
curl -s "127.0.0.1:$port/v1/top?k=1" >/dev/null   # the first read after recovery
FAIRFLOW_TOKEN_FILE="$token" python3 "$(dirname "$0")/reads_bounded.py" "$port" "$pid" "$mode" "$secs"
started=$(date +%s.%N); kill -TERM $pid
( sleep 60; kill -KILL $pid 2>/dev/null ) & wait $pid || true
echo "{\"sigterm_to_exit_secs\": $(echo "$(date +%s.%N) - $started" | bc)}"
rm -rf "$work"
