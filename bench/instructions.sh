#!/usr/bin/env bash
# Server instructions per acquire+release pair, counted by callgrind inside Redis's `call()`
# under a depth-16 load: repeatable where wall-clock ratios are not (a shared 2-core VM).
#   bench/instructions.sh [rlock|lua|plain] [seconds]
# Needs valgrind; builds nothing: run `cargo build --release -p rlock -p rlock-bench` first.
set -euo pipefail
side="${1:-rlock}"
secs="${2:-4}"
root="$(cd "$(dirname "$0")/.." && pwd)"
module="$root/target/release/librlock.so"
bench="$root/target/release/rlock-bench"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
work="$(mktemp -d)"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

valgrind --tool=callgrind --callgrind-out-file="$work/out" --collect-atstart=no \
    --toggle-collect=call redis-server --port "$port" --bind 127.0.0.1 --save "" \
    --loadmodule "$module" >"$work/log" 2>&1 &
server=$!
for _ in $(seq 150); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.2
done
"$bench" load "$port" "$side" 16 "$secs" >/dev/null
case "$side" in
    rlock) counted=lock.release; per=1 ;;
    lua) counted=evalsha; per=2 ;;
    plain) counted=del; per=1 ;;
    *) echo "side must be rlock, lua or plain" >&2; exit 2 ;;
esac
calls="$(redis-cli -p "$port" info commandstats | tr -d '\r' |
    sed -n "s/^cmdstat_$counted:calls=\([0-9]*\),.*/\1/p")"
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$server" || true
total="$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/log")"
pairs=$((calls / per))
echo "$side: $pairs pairs, $((total / pairs)) instructions per pair inside call()"
