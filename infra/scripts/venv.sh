#!/usr/bin/env bash
# Creates the project-local virtualenv (.venv) with the pinned emulator, once; prints its path.
set -euo pipefail
exec "$(dirname "$0")/pinned-venv.sh" .venv infra/scripts/requirements.txt moto_server \
  "it runs the local DynamoDB emulator"
