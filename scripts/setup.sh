#!/usr/bin/env bash
# Set up a fresh machine for HelpPuff Crawl: Debian's Chromium (for JS rendering), and a Python
# virtual environment in .venv with the project and its test tools. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  echo "setup: installing Debian's chromium (JS rendering)" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# pip 23 cannot install lxml[html-clean]: upgrade pip first.
.venv/bin/python -m pip install -q --upgrade pip
# The CPU build of torch first (from this machine's local package disk): an unpinned torch,
# asked for by sentence-transformers, would pull a multi-GB CUDA build.
.venv/bin/python -m pip install -q torch==2.13.0
.venv/bin/python -m pip install -q -e '.[local,test]'
