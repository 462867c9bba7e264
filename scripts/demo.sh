#!/usr/bin/env bash
# Set up, then crawl the example site (tests/sites/acme-plumbing, served on loopback) into the
# local knowledge base (./.helppuff), and show what was learned.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1
PORT="${PORT:-8765}"
.venv/bin/python -m tests.sitesserver tests/sites/acme-plumbing --port "$PORT" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  .venv/bin/python -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $PORT)))" && break
  sleep 0.1
done
.venv/bin/helppuff crawl "http://127.0.0.1:$PORT" --site acme || true
.venv/bin/helppuff status --site acme --pages
.venv/bin/helppuff knowledge status --site acme
