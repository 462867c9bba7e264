#!/usr/bin/env bash
# Build the crawl container image (the Dockerfile at the repo root): bash scripts/build-image.sh [TAG]
# (default TAG helppuff-crawl:latest). Run scripts/docker-up.sh first for a daemon.
#
# The base image (BASE, default helppuff-base:bookworm) is made here when Docker does not have it,
# since no image registry may be reachable: `debootstrap --variant=minbase bookworm` from the
# Debian mirror this machine's apt sources name (else http://deb.debian.org/debian), with the
# image's own apt sources pointed at that same mirror, then `docker import`.
#
# The build runs with `--network host`. While it runs, a file server on 127.0.0.1 lends the build
# what this machine's pip uses and a registry cannot give: its CA bundle (pip's `cert`, for an
# intercepting proxy) and the folders of local wheels (PIP_FIND_LINKS, pip's `find-links`: the CPU
# build of torch). The image keeps neither. Safe to run again: Docker's cache makes a rebuild quick.
set -euo pipefail
cd "$(dirname "$0")/.."

TAG="${1:-helppuff-crawl:latest}"
BASE="${BASE:-helppuff-base:bookworm}"
SUITE=bookworm
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
base_root=""  # debootstrap's folder while the base is made
lend=""       # the files lent to the build, and their server
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null
  [ -n "$lend" ] && rm -rf "$lend"
  [ -n "$base_root" ] && $SUDO rm -rf "$base_root"
  return 0
}
trap cleanup EXIT

die() { echo "build-image: $*" >&2; exit 1; }

command -v docker >/dev/null 2>&1 || die "docker is not installed (bash scripts/docker-up.sh installs it)"
docker info >/dev/null 2>&1 || die "the Docker daemon does not answer (bash scripts/docker-up.sh starts it)"
command -v python3 >/dev/null 2>&1 || die "python3 is needed to read the apt sources and lend pip's files"

# The bookworm/trixie main mirror of this machine's apt sources (one-line .list and deb822 .sources),
# and the security mirror beside it when there is one.
apt_mirrors() {
  python3 - "$@" <<'PY'
import glob, re
files = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")) \
        + sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))
entries = []  # (uri, suites, components)
for name in files:
    try:
        text = open(name, encoding="utf-8").read()
    except OSError:
        continue
    if name.endswith(".sources"):
        for stanza in re.split(r"\n\s*\n", text):
            fields = {}
            for line in stanza.splitlines():
                if line.startswith("#") or ":" not in line or line[:1].isspace():
                    continue
                key, value = line.split(":", 1)
                fields[key.strip().lower()] = value.split("#")[0].split()
            if "deb" in fields.get("types", []) and fields.get("enabled", ["yes"])[0].lower() != "no":
                for uri in fields.get("uris", []):
                    entries.append((uri, fields.get("suites", []), fields.get("components", [])))
    else:
        for line in text.splitlines():
            words = re.sub(r"\[[^]]*\]", "", line.split("#")[0]).split()
            if len(words) >= 4 and words[0] == "deb":
                entries.append((words[1], [words[2]], words[3:]))
def first(suites):
    return next((uri.rstrip("/") for uri, s, c in entries if "main" in c and set(s) & suites), "")
print(first({"bookworm", "trixie"}) or "http://deb.debian.org/debian")
print(first({"bookworm-security", "trixie-security"}))
PY
}

make_base() {
  command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed (bash scripts/docker-up.sh installs it)"
  local mirrors mirror security root
  mirrors="$(apt_mirrors)"
  mirror="$(sed -n 1p <<<"$mirrors")"
  security="$(sed -n 2p <<<"$mirrors")"
  root="$(mktemp -d /tmp/helppuff-base.XXXXXX)"
  base_root="$root"
  echo "build-image: making $BASE with debootstrap --variant=minbase $SUITE from $mirror" >&2
  if ! $SUDO debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$root.log" 2>&1; then
    tail -5 "$root.log" >&2
    die "debootstrap failed (log: $root.log)"
  fi
  rm -f "$root.log"
  {
    echo "deb $mirror $SUITE main"
    echo "deb $mirror $SUITE-updates main"
    [ -n "$security" ] && echo "deb $security $SUITE-security main"
  } | $SUDO tee "$root/etc/apt/sources.list" >/dev/null
  # A mirror that serves a dated snapshot has Release files past their Valid-Until: apt here is told
  # so, and the image's apt is told the same.
  if apt-config dump 2>/dev/null | grep '^Acquire::Check-Valid-Until "false"' >/dev/null; then  # not -q: pipefail
    echo 'Acquire::Check-Valid-Until "false";' | $SUDO tee "$root/etc/apt/apt.conf.d/99helppuff-mirror" >/dev/null
  fi
  $SUDO rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  $SUDO tar -C "$root" -c . | docker import -m "debootstrap --variant=minbase $SUITE $mirror" - "$BASE" >/dev/null
  $SUDO rm -rf "$root"
  base_root=""
}

if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  base_start=$(date +%s)
  make_base
  echo "build-image: $BASE made in $(( $(date +%s) - base_start )) s" >&2
fi

# pip's CA bundle and local wheel folders, as this machine's pip is configured.
pip_config() { python3 -m pip config get "global.$1" 2>/dev/null || true; }
cert="${PIP_CERT:-$(pip_config cert)}"
cert="${cert:-/etc/ssl/certs/ca-certificates.crt}"  # else this machine's trust store
links="${PIP_FIND_LINKS:-$(pip_config find-links)}"
lend="$(mktemp -d /tmp/helppuff-build-files.XXXXXX)"
mkdir -p "$lend/wheels"
[ -n "$cert" ] && [ -f "$cert" ] && cp "$cert" "$lend/ca.crt"
for dir in $links; do
  [ -d "$dir" ] && find "$dir" -maxdepth 1 -name 'torch-*.whl' -exec ln -s {} "$lend/wheels/" \;
done
# A fixed port: the URL is a build argument, and a new value would void Docker's cache of every step.
port="${BUILD_FILES_PORT:-38517}"
if python3 -c "import socket,sys; sys.exit(socket.socket().connect_ex(('127.0.0.1', $port)) != 0)"; then
  die "127.0.0.1:$port is taken (another build running?): set BUILD_FILES_PORT to a free port"
fi
python3 -m http.server --bind 127.0.0.1 --directory "$lend" "$port" >/dev/null 2>&1 &
server=$!
for _ in $(seq 50); do
  python3 -c "import socket,sys; sys.exit(socket.socket().connect_ex(('127.0.0.1', $port)))" && break
  sleep 0.1
done

echo "build-image: building $TAG on $BASE" >&2
start=$(date +%s)
DOCKER_BUILDKIT=0 docker build --network host --build-arg BASE="$BASE" \
  --build-arg BUILD_FILES="http://127.0.0.1:$port" -t "$TAG" .
size="$(docker image inspect -f '{{.Size}}' "$TAG")"
echo "build-image: $TAG built in $(( $(date +%s) - start )) s, $(( size / 1000000 )) MB" >&2
