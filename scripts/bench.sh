#!/usr/bin/env bash
# `make bench`: builds the bench (release) and the Python peer's virtualenv (.venv-bench, pinned
# in testing/bench/requirements.txt), then prints every figure. With EVENT=path.json it only
# decodes + groups that captured Lambda event.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
venv="$root/.venv-bench"
stamp="$venv/.requirements.sha"
want="$(sha256sum testing/bench/requirements.txt | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r testing/bench/requirements.txt >&2
  echo "$want" >"$stamp"
fi
if [ -n "${EVENT:-}" ]; then
  exec cargo run --release --quiet -p likes-bench -- decode "$EVENT"
fi
exec cargo run --release --quiet -p likes-bench -- all
