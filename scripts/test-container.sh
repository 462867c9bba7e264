#!/usr/bin/env bash
# The container test (slow, its own script; .ci/run runs it after scripts/test.sh): start Docker
# (scripts/docker-up.sh), build the image (scripts/build-image.sh), then run
# tests/container/test_image.py, which crawls a loopback site inside the image and searches it.
# Extra arguments go to pytest. The test's host side (the fixture site, `helppuff serve` standing in
# for the Worker) uses .venv and the Worker's toolchain, set up here when absent; PYTHON overrides
# the interpreter (one with the project importable).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false
unset CLOUDFLARE_API_TOKEN CLOUDFLARE_ACCOUNT_ID

start=$(date +%s)
bash scripts/docker-up.sh

PYTHON="${PYTHON:-.venv/bin/python}"
[ -x "$PYTHON" ] || bash scripts/setup.sh
if [ ! -x worker/.node/bin/node ] || [ ! -e worker/node_modules/wrangler/bin/wrangler.js ]; then
  bash scripts/setup-worker.sh
fi

export HELPPUFF_IMAGE="${HELPPUFF_IMAGE:-helppuff-crawl:test}"
log="$(mktemp /tmp/helppuff-build-image.XXXXXX.log)"
build_start=$(date +%s)
if ! bash scripts/build-image.sh "$HELPPUFF_IMAGE" >"$log" 2>&1; then
  tail -40 "$log" >&2
  echo "test-container: the image did not build (log: $log)" >&2
  exit 1
fi
export HELPPUFF_IMAGE_BUILD_SECONDS=$(( $(date +%s) - build_start ))
grep '^build-image:' "$log" >&2 || true
rm -f "$log"

status=0
HELPPUFF_CONTAINER_TEST=1 "$PYTHON" -m pytest -q -s tests/container "$@" || status=$?
echo "test-container: $(( $(date +%s) - start )) s in all" >&2
exit "$status"
