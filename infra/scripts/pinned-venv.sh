#!/usr/bin/env bash
# Creates a project-local virtualenv with pinned requirements, once (again when the requirements
# change); prints its path. Every Python tool the scripts use comes through here.
#   infra/scripts/pinned-venv.sh VENV REQUIREMENTS PROGRAM WHY
# VENV: the folder under the repository (.venv, .venv-sam, …); REQUIREMENTS: a pinned file under
# scripts/ or testing/; PROGRAM: a file in VENV/bin that exists once installed; WHY: what it is
# for, for the message when python3 is missing.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/$1" requirements="$root/$2" program="$3" why="$4"
stamp="$venv/.requirements.sha"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ ! -x "$venv/bin/$program" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  if ! command -v python3 >/dev/null; then
    echo "python3 not found: install Python 3 (3.11 is tested) with venv (Debian: python3-venv); $why" >&2
    exit 1
  fi
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  echo "$want" >"$stamp"
fi
echo "$venv"
