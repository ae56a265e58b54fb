#!/usr/bin/env bash
# Server instructions per operation, counted by callgrind inside Redis's `processCommand()`
# (the command's lookup and checks, its run, and any command it runs in turn: a script's, a
# fenced write's) under a depth-16 load: repeatable where wall-clock ratios are not.
#   bench/instructions.sh SIDE [seconds] [callgrind output]
# SIDE: rlock, listened (rlock with every owner's prefix listened for, LOCK.LISTEN), lua,
# plain (HSET+DEL), noop (two calls of the empty module command), bare (the module API calls
# of the pair's contract and nothing else: NOOP.HOLD and NOOP.FREE): per acquire+release
# pair, loaded by `rlock-bench load`; fenced (`LOCK.FENCED ... HSET`), bare-fenced
# (`NOOP.FENCED ... HSET`: the module API calls of a fenced write and nothing else) and hset
# (the plain `HSET`): per write, loaded by redis-benchmark. With a third argument the
# callgrind output is kept there, for `callgrind_annotate --inclusive=yes FILE`.
# Needs valgrind; builds nothing: run `cargo build --release -p rlock -p rlock-bench` first
# (and `bench/floor/build.sh` for noop, bare and bare-fenced).
set -euo pipefail
side="${1:-rlock}"
secs="${2:-4}"
keep="${3:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
module="$target/release/librlock.so"
bench="$target/release/rlock-bench"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
work="$(mktemp -d)"
trap 'kill ${listener:-} 2>/dev/null; redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

floor=()
[[ "$side" =~ ^(noop|bare|bare-fenced)$ ]] && floor=(--loadmodule "$target/release/librlock_floor.so")
valgrind --tool=callgrind --callgrind-out-file="$work/out" --collect-atstart=no \
    --toggle-collect=processCommand redis-server --port "$port" --bind 127.0.0.1 --save "" \
    --loadmodule "$module" "${floor[@]}" >"$work/log" 2>&1 &
server=$!
for _ in $(seq 150); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.2
done
writes=$((secs * 10000))
if [ "$side" = listened ]; then
    # One connection per owner prefix of the load (bench-0 to bench-49), open until the end.
    python3 - "$port" "$((secs + 30))" <<'PY' &
import socket, sys, time
port, hold = int(sys.argv[1]), float(sys.argv[2])
conns = []
for i in range(50):
    s = socket.create_connection(("127.0.0.1", port))
    prefix = b"bench-%d" % i
    s.sendall(b"*2\r\n$11\r\nLOCK.LISTEN\r\n$%d\r\n%s\r\n" % (len(prefix), prefix))
    s.recv(1000)
    conns.append(s)
time.sleep(hold)
PY
    listener=$!
    for _ in $(seq 100); do
        [ "$(redis-cli -p "$port" client list | grep -c 'cmd=lock.listen')" -ge 50 ] && break
        sleep 0.1
    done
fi
case "$side" in
    rlock | lua | plain | noop | bare) "$bench" load "$port" "$side" 16 "$secs" >/dev/null ;;
    listened) "$bench" load "$port" rlock 16 "$secs" >/dev/null ;;
    fenced | bare-fenced)
        token="$(redis-cli -p "$port" LOCK.ACQUIRE 'lock:{f}' bench LEASE 3600000)"
        command=LOCK.FENCED
        [ "$side" = bare-fenced ] && command=NOOP.FENCED
        redis-benchmark -p "$port" -P 16 -c 8 -n "$writes" -q \
            "$command" 'lock:{f}' bench "$token" HSET 'order:{f}' f v >/dev/null ;;
    hset) redis-benchmark -p "$port" -P 16 -c 8 -n "$writes" -q HSET 'order:{f}' f v >/dev/null ;;
    *) echo "side must be rlock, listened, lua, plain, noop, bare, fenced, bare-fenced or hset" >&2; exit 2 ;;
esac
case "$side" in
    rlock | listened) counted=lock.release; per=1 ;;
    lua) counted=evalsha; per=2 ;;
    plain) counted=del; per=1 ;;
    noop) counted=noop.keyed; per=2 ;;
    bare) counted=noop.free; per=1 ;;
    fenced) counted=lock.fenced; per=1 ;;
    bare-fenced) counted=noop.fenced; per=1 ;;
    hset) counted=hset; per=1 ;;
esac
calls="$(redis-cli -p "$port" info commandstats | tr -d '\r' |
    sed -n "s/^cmdstat_$counted:calls=\([0-9]*\),.*/\1/p")"
redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
wait "$server" || true
total="$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/log")"
ops=$((calls / per))
[ -n "$keep" ] && cp "$work/out" "$keep"
case "$side" in
    fenced | bare-fenced | hset) echo "$side: $ops writes, $((total / ops)) instructions per write inside processCommand()" ;;
    *) echo "$side: $ops pairs, $((total / ops)) instructions per pair inside processCommand()" ;;
esac
