#!/usr/bin/env bash
# Set up, crawl the example site (tests/sites/acme-plumbing, served on loopback) into the local
# knowledge base (./.helppuff), show what was learned, then start the Worker on it (helppuff serve)
# and ask the chat a visitor's question: the answer, with its source. Ends by saying how to open the
# owner's dashboard and the chat widget.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/setup-worker.sh
export HF_HUB_OFFLINE=1
PORT="${PORT:-8765}"
WORKER_PORT="${WORKER_PORT:-8787}"
SITE_URL="http://127.0.0.1:$PORT"
WORKER_URL="http://127.0.0.1:$WORKER_PORT"
LOGS="$(mktemp -d)"
.venv/bin/python -m tests.sitesserver tests/sites/acme-plumbing --port "$PORT" &
SERVER=$!
SERVE=""
cleanup() {
  if [ -n "$SERVE" ]; then kill -TERM "$SERVE" 2>/dev/null || true; wait "$SERVE" 2>/dev/null || true; fi
  kill "$SERVER" 2>/dev/null || true
  rm -rf "$LOGS"
}
trap cleanup EXIT
for _ in $(seq 50); do
  .venv/bin/python -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $PORT)))" && break
  sleep 0.1
done
.venv/bin/helppuff crawl "$SITE_URL" --site acme || true
.venv/bin/helppuff status --site acme --pages
.venv/bin/helppuff knowledge status --site acme
# The chat answers pages of the origins a site lists: the example site's own, and the Worker's
# (its /demo page carries the widget).
echo "{\"backend\": {\"allowedOrigins\": [\"$SITE_URL\", \"$WORKER_URL\"]}}" | .venv/bin/helppuff settings set - --site acme

.venv/bin/helppuff serve --port "$WORKER_PORT" --no-worker >"$LOGS/serve.out" 2>"$LOGS/serve.err" &
SERVE=$!
for _ in $(seq 240); do
  grep -q "^Ready\." "$LOGS/serve.out" 2>/dev/null && break
  if ! kill -0 "$SERVE" 2>/dev/null; then cat "$LOGS/serve.err" >&2; echo "demo: helppuff serve stopped" >&2; exit 1; fi
  sleep 0.5
done
grep -q "^Ready\." "$LOGS/serve.out" || { cat "$LOGS/serve.err" >&2; echo "demo: helppuff serve was not ready" >&2; exit 1; }
echo
echo "A visitor on $SITE_URL asks: How much is a call-out?"
.venv/bin/helppuff ask "How much is a call-out?" --site acme --origin "$SITE_URL" --url "$WORKER_URL"
cat <<EOT

To go on:
  .venv/bin/helppuff secret set OWNER_TOKEN      # once: the owner's password for the dashboard (read from stdin)
  .venv/bin/helppuff serve                       # the Worker, the local cloud and a crawl worker; Ctrl-C stops them
  then open $WORKER_URL/admin            the owner's dashboard (log in with that token)
       $WORKER_URL/demo?site=acme        the chat widget on a page
EOT
