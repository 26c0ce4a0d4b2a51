#!/usr/bin/env bash
# Installs the test OpenID provider (tests/oidc: node-oidc-provider, pinned with all its
# dependencies in package-lock.json) when it is missing or its lock file changed. Needs Node 20+
# and npm; reaches only the npm registry.
set -euo pipefail
dir="$(cd "$(dirname "$0")/../oidc" && pwd)"
stamp="$dir/node_modules/.installed-lock"
if [ -f "$stamp" ] && cmp -s "$stamp" "$dir/package-lock.json"; then
  exit 0
fi
command -v node >/dev/null || { echo "oidc-install: node is missing (Node 20 or later)" >&2; exit 1; }
npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error
cp "$dir/package-lock.json" "$stamp"
echo "oidc-install: node-oidc-provider $(node -p "require('$dir/node_modules/oidc-provider/package.json').version") in tests/oidc"
