#!/usr/bin/env bash
# Fuzzes the API over real HTTP with schemathesis, generated from functions/likes-api/openapi.yaml: the local stack
# (its own emulator, a free port) answers every generated request, valid and invalid, and every
# answer must conform to the spec and never be a 5xx. Stops everything it started.
#   tests/scripts/api-fuzz.sh [extra schemathesis options]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
. "$root/infra/scripts/lib.sh"
"$root/infra/scripts/venv.sh" >/dev/null
venv="$("$root/infra/scripts/pinned-venv.sh" .venv-apitest tests/scripts/requirements-apitest.txt st "pip installs schemathesis")"
# Built as `make test` builds it (the workspace's tests need it), so that nothing is built again
# with other features.
cargo test --quiet --workspace --test e2e --no-run
bin="$(target_dir)/debug/likes-local"
port="$(free_port)"
log="$(mktemp -t likes-local.XXXXXX.log)"
# Limits off: the fuzzer is one caller making thousands of requests, and would otherwise
# explore little beyond the 429 (functions/likes-api/openapi.yaml documents it; tests/e2e/limits.rs exercises it).
NO_COLOR=1 LIKES_CALLER_LIMITS=off LIKES_REACTION_KINDS=like,love,+1 LIKES_PORT="$port" "$bin" >"$log" 2>&1 &
pid=$!
cleanup() { kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -f "$log"; }
trap cleanup EXIT INT TERM
wait_until_up likes-local "http://127.0.0.1:$port/healthz" "$pid" "$log" 30
token="$("$bin" token 7c9e6679-7425-40de-944b-e07fc1f90ae7)"
# positive_data_acceptance is left out on purpose: a schema-valid but made-up cursor is rightly a
# 400 (cursors are opaque and checked), which that check would count as a failure.
# use_after_free too: it reads a path under one a DELETE answered (DELETE
# /posts/{p}/reactions/{kind}, then GET …/{kind}/users) and expects a 404. Here a DELETE removes
# the caller's reaction, not a resource at that path: who else reacted is rightly still a 200.
"$venv/bin/st" run functions/likes-api/openapi.yaml \
  --url "http://127.0.0.1:$port" \
  --header "Authorization: Bearer $token" \
  --checks all \
  --exclude-checks positive_data_acceptance,use_after_free \
  --max-examples "${API_FUZZ_EXAMPLES:-40}" \
  --seed "${API_FUZZ_SEED:-20261130}" \
  --workers 2 \
  --no-color \
  --generation-database none \
  "$@"
