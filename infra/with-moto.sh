#!/usr/bin/env bash
# Runs a command with moto's DynamoDB + Streams emulator on a free loopback port, and stops the
# emulator afterwards whatever happens. The endpoint is exported as LIKES_TEST_DYNAMODB_ENDPOINT.
#   infra/with-moto.sh cargo test --workspace
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
"$here/venv.sh" >/dev/null
port="$("$root/.venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
log="$(mktemp -t moto.XXXXXX.log)"
"$root/.venv/bin/moto_server" -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto_pid=$!
cleanup() { kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true; rm -f "$log"; }
trap cleanup EXIT INT TERM
endpoint="http://127.0.0.1:$port"
# Poll until the emulator answers, with a deadline.
for _ in $(seq 1 100); do
  if "$root/.venv/bin/python" -c "import urllib.request,sys; urllib.request.urlopen('$endpoint/moto-api/', timeout=1)" 2>/dev/null; then
    break
  fi
  if ! kill -0 "$moto_pid" 2>/dev/null; then echo "moto failed to start:" >&2; cat "$log" >&2; exit 1; fi
  sleep 0.1
done
export LIKES_TEST_DYNAMODB_ENDPOINT="$endpoint"
echo "moto on $endpoint" >&2
"$@"
