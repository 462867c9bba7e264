#!/usr/bin/env bash
# Set up (scripts/setup-worker.sh), then type-check the Worker and run its tests in workerd
# (vitest with @cloudflare/vitest-plugin), fully offline. Extra arguments go to `vitest run`.
# The exit code is the tests' result.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-worker.sh
cd worker
export PATH="$PWD/.node/bin:$PATH"
export CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false
unset CLOUDFLARE_API_TOKEN CLOUDFLARE_ACCOUNT_ID
node_modules/.bin/tsc --noEmit
exec node_modules/.bin/vitest run "$@"
