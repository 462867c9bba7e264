#!/usr/bin/env bash
# Set up (scripts/setup-worker.sh), then type-check the Worker, build its deploy bundle and run
# its tests in workerd (vitest with @cloudflare/vitest-plugin), fully offline. Extra arguments go
# to `vitest run`. The exit code is the tests' result (1 when the bundle cannot be built).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-worker.sh
cd worker
export PATH="$PWD/.node/bin:$PATH"
export CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false
unset CLOUDFLARE_API_TOKEN CLOUDFLARE_ACCOUNT_ID
node_modules/.bin/tsc --noEmit

# The bundle `wrangler deploy` would upload, from the checked-in wrangler.jsonc (its top-level
# environment), with nothing sent anywhere: --dry-run, no credentials, and no banner (so no
# update check against the npm registry).
bundle="$(mktemp -d)"
if ! WRANGLER_HIDE_BANNER=true node_modules/.bin/wrangler deploy --dry-run --config wrangler.jsonc --env="" \
    --outdir "$bundle" >"$bundle/wrangler.log" 2>&1; then
  cat "$bundle/wrangler.log" >&2
  echo "test-worker: wrangler deploy --dry-run failed" >&2
  rm -rf "$bundle"
  exit 1
fi
if [ ! -s "$bundle/index.js" ] || ! grep -q "/v1/sites/" "$bundle/index.js"; then
  cat "$bundle/wrangler.log" >&2
  echo "test-worker: wrangler deploy --dry-run produced no Worker bundle (index.js)" >&2
  rm -rf "$bundle"
  exit 1
fi
echo "test-worker: deploy bundle built ($(wc -c <"$bundle/index.js") bytes, wrangler deploy --dry-run)"
rm -rf "$bundle"

exec node_modules/.bin/vitest run "$@"
