#!/usr/bin/env bash
# Runs the release likes-api binary held to the CPU share Lambda gives each memory size (one
# vCPU at 1,769 MB: a CFS quota of MB/1769 of a core, as Lambda's own throttling works), and
# prints its cold start and warm latency at each. Linux with cgroup v1's cpu controller, as
# root; the emulator and the test runner stay unthrottled, like the rest of AWS.
#   tests/scripts/lambda-memory.sh [MB ...]        (default: 128 256 512)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cg=/sys/fs/cgroup/cpu
[ -w "$cg" ] || { echo "lambda-memory: needs write access to $cg (cgroup v1 cpu, as root)" >&2; exit 2; }
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
cargo build --release -p likes-api >&2
work="$(mktemp -d -t lambda-memory.XXXXXX)"
trap 'rm -rf "$work"; for d in "$cg"/likes-mb-*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null || true; done' EXIT
for mb in "${@:-128 256 512}"; do
  for m in $mb; do
    d="$cg/likes-mb-$m"
    mkdir -p "$d"
    echo 100000 > "$d/cpu.cfs_period_us"
    echo $(( m * 100000 / 1769 )) > "$d/cpu.cfs_quota_us"
    printf '#!/bin/sh\necho $$ > %s/cgroup.procs\nexec %s/release/likes-api "$@"\n' "$d" "$target" > "$work/likes-api-$m"
    chmod +x "$work/likes-api-$m"
    echo "== $m MB ($(( m * 1000 / 1769 ))/1000 of a vCPU)"
    LIKES_LAMBDA_BIN="$work/likes-api-$m" infra/scripts/with-moto.sh cargo test -q --workspace \
      --test api -- bootstrap:: function_url:: --nocapture --test-threads 1 2>/dev/null |
      grep -E "cold start|warm requests" || true
  done
done
