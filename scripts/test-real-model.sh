#!/usr/bin/env bash
# The real-model tier (slow, its own script; .ci/run runs it after scripts/test.sh): install its
# parts (scripts/setup-real-model.sh: llama-server built from source, SmolLM2-135M-Instruct), then
# run tests/test_dev_loop_real_model.py, which serves the model with llama-server on loopback behind
# `helppuff serve` and asks the Worker for answers, tool calls, the gap check and `knowledge facts
# detect`. The Worker's toolchain is set up when absent. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false
unset CLOUDFLARE_API_TOKEN CLOUDFLARE_ACCOUNT_ID

start=$(date +%s)
bash scripts/setup-real-model.sh
if [ ! -x worker/.node/bin/node ] || [ ! -e worker/node_modules/wrangler/bin/wrangler.js ]; then
  bash scripts/setup-worker.sh
fi
status=0
HELPPUFF_REAL_MODEL_TEST=1 .venv/bin/python -m pytest -q -rs tests/test_dev_loop_real_model.py "$@" || status=$?
echo "test-real-model: $(( $(date +%s) - start )) s in all" >&2
exit "$status"
