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

# A dockerd that is running (not one that is dying) is waited for; with none, one is started, after
# removing the pid file a killed one left (dockerd refuses to start while its pid still exists).
live_dockerd() { pgrep -x --runstates R,S,D dockerd >/dev/null 2>&1; }
starts=0
for _ in $(seq 90); do
  docker info >/dev/null 2>&1 && exit 0
  if ! live_dockerd && [ "$starts" -lt 3 ]; then
    [ "$starts" -eq 0 ] && echo "docker-up: starting dockerd (log: $DOCKERD_LOG)" >&2
    $SUDO rm -f /var/run/docker.pid
    # setsid: the daemon outlives this script and the shell that ran it.
    $SUDO setsid dockerd --bridge=none --iptables=false --ip6tables=false >>"$DOCKERD_LOG" 2>&1 </dev/null &
    starts=$((starts + 1))
  fi
  sleep 1
done
echo "docker-up: the Docker daemon did not answer within 90 s (see $DOCKERD_LOG)" >&2
exit 1
