#!/usr/bin/env bash
# Runs a command with moto's DynamoDB + Streams emulator on a free loopback port, and stops the
# emulator afterwards whatever happens. The endpoint is exported as LIKES_TEST_DYNAMODB_ENDPOINT.
#   infra/scripts/with-moto.sh cargo test --workspace
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
. "$here/lib.sh"
"$here/venv.sh" >/dev/null
port="$(free_port)"
log="$(mktemp -t moto.XXXXXX.log)"
"$root/.venv/bin/python" "$here/moto-server.py" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto_pid=$!
cleanup() { kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true; rm -f "$log"; }
trap cleanup EXIT INT TERM
endpoint="http://127.0.0.1:$port"
wait_until_up moto "$endpoint/moto-api/" "$moto_pid" "$log" 10
export LIKES_TEST_DYNAMODB_ENDPOINT="$endpoint"
echo "moto on $endpoint" >&2
"$@"
