#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run every test. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false
unset CLOUDFLARE_API_TOKEN CLOUDFLARE_ACCOUNT_ID
# The Worker's tests (TypeScript, in real workerd), then the crawler's (pytest).
bash scripts/test-worker.sh
exec .venv/bin/python -m pytest "$@"
