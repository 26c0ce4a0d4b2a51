#!/usr/bin/env bash
# Creates the project-local virtualenv (.venv-lambda) with the pinned cargo-lambda and the Zig
# it links with, once; prints the path of its bin/ directory. Put that first on PATH and
# `cargo lambda` works:
#   PATH="$(infra/scripts/lambda-venv.sh):$PATH" cargo lambda build --release --arm64
set -euo pipefail
venv="$("$(dirname "$0")/pinned-venv.sh" .venv-lambda infra/scripts/requirements-lambda.txt cargo-lambda \
  "pip installs cargo-lambda and Zig")"
echo "$venv/bin"
