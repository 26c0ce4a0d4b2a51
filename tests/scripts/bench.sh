#!/usr/bin/env bash
# `make bench`: builds the bench (release) and the Python peer's virtualenv (.venv-bench, pinned
# in tests/bench/requirements.txt), then prints every figure. With EVENT=path.json it only
# decodes + groups that captured Lambda event.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
"$root/infra/scripts/pinned-venv.sh" .venv-bench tests/bench/requirements.txt python "pip installs the Python peer's boto3" >/dev/null
if [ -n "${EVENT:-}" ]; then
  exec cargo run --release --quiet -p likes-bench -- decode "$EVENT"
fi
# The emulator, for the reactions' counted requests.
exec "$root/infra/scripts/with-moto.sh" cargo run --release --quiet -p likes-bench -- all
