#!/usr/bin/env bash
# The server's instructions per acquisition, counted by callgrind over the whole server (the
# event loop, the reading and writing of replies included): an uncontended acquire+release
# pair at depth 16, against an acquisition handed over from one waiter to the next (blocked
# clients or tickets, scenario 9's handoffs), and as floors an empty module command and the
# same two ways of waiting handed on with nothing held (bench/floor/noop.c). Repeatable
# where wall-clock ratios are not.
#   bench/handoff-instructions.sh [seconds]
# Needs valgrind and gcc; builds nothing of rlock: run
# `cargo build --release -p rlock -p rlock-bench` first.
set -euo pipefail
secs="${1:-5}"
root="$(cd "$(dirname "$0")/.." && pwd)"
module="$root/target/release/librlock.so"
bench="$root/target/release/rlock-bench"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The floor module, built against the header the module's own crate ships.
"$root/bench/floor/build.sh" "$work/noop.so" >/dev/null

# count NAME MODULE -- a command that loads the server: instructions of the whole server.
count() {
    local name="$1" mod="$2"
    shift 3
    local port
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    valgrind --tool=callgrind --callgrind-out-file="$work/$name.out" redis-server --port "$port" \
        --bind 127.0.0.1 --save "" --loadmodule "$mod" >"$work/$name.log" 2>&1 &
    local server=$!
    for _ in $(seq 150); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.2
    done
    "${@/PORT/$port}" >"$work/$name.run"
    redis-cli -p "$port" info commandstats | tr -d '\r' >"$work/$name.stats"
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
    wait "$server" || true
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$work/$name.log"
}
calls() { sed -n "s/^cmdstat_$2:calls=\([0-9]*\),.*/\1/p" "$work/$1.stats"; }

pair="$(count pair "$module" -- "$bench" load PORT rlock 16 "$secs")"
echo "uncontended pair (depth 16): $((pair / $(calls pair lock.release))) instructions per acquisition"
plain="$(count plain "$module" -- "$bench" load PORT plain 16 "$secs")"
echo "HSET+DEL pair (depth 16): $((plain / $(calls plain del))) instructions per pair"
for mode in block tickets floor-block floor-tickets; do
    mod="$module"
    [[ "$mode" == floor-* ]] && mod="$work/noop.so"
    total="$(count "$mode" "$mod" -- "$bench" handoffs PORT "$mode" "$secs")"
    handoffs="$(sed -n 's/^[a-z-]*: \([0-9]*\) handoffs.*/\1/p' "$work/$mode.run")"
    echo "handoff ($mode): $((total / handoffs)) instructions per acquisition"
done
noop="$(count noop "$work/noop.so" -- redis-benchmark -p PORT -P 16 -c 4 -n 200000 -q NOOP.KEYED k)"
echo "empty module command (depth 16): $((noop / 200000)) instructions per call"
