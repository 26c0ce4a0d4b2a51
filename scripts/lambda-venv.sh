#!/usr/bin/env bash
# Creates the project-local virtualenv (.venv-lambda) with the pinned cargo-lambda and the Zig
# it links with, once; prints the path of its bin/ directory. Put that first on PATH and
# `cargo lambda` works:
#   PATH="$(scripts/lambda-venv.sh):$PATH" cargo lambda build --release --arm64
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv-lambda"
stamp="$venv/.requirements.sha"
want="$(sha256sum "$root/scripts/requirements-lambda.txt" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/cargo-lambda" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  if ! command -v python3 >/dev/null; then
    echo "python3 not found: install Python 3 (3.11 is tested); pip installs cargo-lambda and Zig" >&2
    exit 1
  fi
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$root/scripts/requirements-lambda.txt" >&2
  echo "$want" >"$stamp"
fi
echo "$venv/bin"
