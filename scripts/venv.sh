#!/usr/bin/env bash
# Creates the project-local virtualenv (.venv) with the pinned emulator, once; prints its path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv"
stamp="$venv/.requirements.sha"
want="$(sha256sum "$root/scripts/requirements.txt" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/moto_server" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  if ! command -v python3 >/dev/null; then
    echo "python3 not found: install Python 3 (3.11 is tested); it runs the local DynamoDB emulator" >&2
    exit 1
  fi
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$root/scripts/requirements.txt" >&2
  echo "$want" >"$stamp"
fi
echo "$venv"
