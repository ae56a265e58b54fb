#!/usr/bin/env bash
# Builds the floor module (bench/floor/noop.c: an empty command, waits handed on) against the
# module header the rlock crate builds with, and prints the path of the shared object.
#   bench/floor/build.sh [OUT.so]     (default: <target dir>/release/librlock_floor.so)
# Needs gcc (or $CC) and python3.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-${CARGO_TARGET_DIR:-$root/target}/release/librlock_floor.so}"
header="$(cd "$root" && cargo metadata --format-version 1 2>/dev/null |
    python3 -c 'import json, sys, os
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "redis-module":
        print(os.path.join(os.path.dirname(p["manifest_path"]), "src", "include"))')"
mkdir -p "$(dirname "$out")"
"${CC:-gcc}" -O2 -fPIC -shared -I"$header" -o "$out" "$root/bench/floor/noop.c"
echo "$out"
