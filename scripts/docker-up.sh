#!/usr/bin/env bash
# Make Docker usable on this machine: install Debian's docker.io and debootstrap when missing, and
# start the daemon when `docker info` fails, then wait until it answers. Safe to run again.
#
# The daemon runs without a bridge or iptables rules (`dockerd --bridge=none --iptables=false`):
# builds and containers use `--network host`, so their traffic stays on this machine's loopback.
# Its log: $DOCKERD_LOG (default /tmp/helppuff-dockerd.log).
set -euo pipefail

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
DOCKERD_LOG="${DOCKERD_LOG:-/tmp/helppuff-dockerd.log}"

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v docker >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  packages="$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')"
  echo "docker-up: installing $packages" >&2
  $SUDO apt-get update -qq >/dev/null
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $packages >/dev/null
fi

if docker info >/dev/null 2>&1; then
  exit 0
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  echo "docker-up: starting dockerd (log: $DOCKERD_LOG)" >&2
  # setsid: the daemon outlives this script and the shell that ran it.
  $SUDO setsid dockerd --bridge=none --iptables=false --ip6tables=false >>"$DOCKERD_LOG" 2>&1 </dev/null &
fi
for _ in $(seq 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "docker-up: the Docker daemon did not answer within 60 s (see $DOCKERD_LOG)" >&2
exit 1
