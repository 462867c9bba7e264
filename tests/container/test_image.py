"""The crawl container, built by scripts/build-image.sh and run with docker: the first crawl of
tests/sites/acme-plumbing (served on 127.0.0.1), then a crawl job that the image's own command,
`helppuff worker`, takes from the queue, then a search of what they learned.

Run by scripts/test-container.sh (which starts Docker and builds the image first); the main
`pytest` run does not collect this file (tests/container/conftest.py). The image is
HELPPUFF_IMAGE (default helppuff-crawl:latest); HELPPUFF_IMAGE_BUILD_SECONDS, when the script
gives it, is printed beside the image's size.

Every container runs with `--network host` (the daemon has no bridge), as the image's own user
(not root), on a temporary folder as its /data volume. The search goes through the Worker, which
is not in the image (it runs on Cloudflare): `helppuff serve` on this machine stands in for it,
reading the same folder the container wrote, and the container's `helppuff search` asks it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import kb_rows
from tests.devloop import free_port, serving

IMAGE = os.environ.get("HELPPUFF_IMAGE", "helppuff-crawl:latest")
SITE = "acme"
IMAGE_UID = 10001  # the Dockerfile's helppuff user and group
MIN_LEARNED = 12  # acme-plumbing has 16 pages to learn (tests/test_crawl_acme.py)
DOCKER_TIMEOUT = 600
# The site is on 127.0.0.1: the container's crawls may connect to loopback (a crawl also allows
# 127.0.0.0/8 by itself for a start URL on loopback).
LOOPBACK = {"HELPPUFF_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8"}


@dataclass
class Job:
    """A finished container: its exit status, output, and what `docker inspect` said of it."""

    returncode: int
    stdout: str
    stderr: str
    inspect: dict[str, Any]
    seconds: float


def docker(*args: str, timeout: float = DOCKER_TIMEOUT, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        pytest.fail(f"docker {' '.join(args)} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


def run_container(data_dir: Path, *command: str, env: dict[str, str] | None = None,
                  mounts: tuple[str, ...] = (), entrypoint: str | None = None) -> Job:
    """`docker run --network host` of the image with data_dir as /data; kept until inspected, then removed."""
    name = f"helppuff-test-{uuid.uuid4().hex[:12]}"
    args = ["run", "--name", name, "--network", "host", "-v", f"{data_dir}:/data"]
    if entrypoint:
        args += ["--entrypoint", entrypoint]
    for mount in mounts:
        args += ["-v", mount]
    for key, value in (env or {}).items():
        args += ["-e", f"{key}={value}"]
    start = time.monotonic()
    try:
        result = docker(*args, IMAGE, *command, check=False)
        seconds = time.monotonic() - start
        inspect = json.loads(docker("inspect", name).stdout)[0]
    finally:
        docker("rm", "-f", name, check=False)
    return Job(result.returncode, result.stdout, result.stderr, inspect, seconds)


def first_crawl(data_dir: Path, site: str, url: str) -> Job:
    """The site's first crawl, `helppuff crawl URL --site S`: a crawl job names a site already crawled."""
    return run_container(data_dir, "crawl", url, "--site", site, env=LOOPBACK)


def run_job(data_dir: Path, site: str) -> Job:
    """One crawl job for `site`, as the container runs it: `helppuff recrawl --site S` puts the job on
    the crawl queue (the local cloud's, under /data), then the image's own command, `helppuff worker`,
    with `--once`, takes it, runs the crawl and exits. The worker's Job is returned."""
    asked = run_container(data_dir, "recrawl", "--site", site, env=LOOPBACK)
    assert asked.returncode == 0, f"{asked.stdout}\n{asked.stderr}"
    return run_container(data_dir, "worker", "--once", env=LOOPBACK)


@pytest.fixture(scope="module")
def image() -> dict[str, Any]:
    found = docker("image", "inspect", IMAGE, check=False)
    if found.returncode != 0:
        pytest.fail(f"no image {IMAGE}: build it with bash scripts/build-image.sh")
    info = json.loads(found.stdout)[0]
    built = os.environ.get("HELPPUFF_IMAGE_BUILD_SECONDS")
    print(f"\nimage {IMAGE}: {info['Size']} bytes ({info['Size'] / 1e6:.0f} MB)"
          + (f", built in {built} s" if built else ""))
    return info


@pytest.fixture(scope="module")
def crawled(image, serve_site, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The site served on loopback, crawled into a fresh /data folder by a first crawl, then by a
    crawl job the container's worker takes from the queue."""
    server = serve_site("acme-plumbing")
    data_dir = tmp_path_factory.mktemp("container") / "data"
    data_dir.mkdir()
    data_dir.chmod(0o777)  # the image's user (uid 10001) writes it
    requests_before = len(server.requests)
    first = first_crawl(data_dir, SITE, server.url)
    print(f"\nfirst crawl in the container: {first.seconds:.1f} s")
    assert first.returncode == 0, f"{first.stdout}\n{first.stderr}"
    job = run_job(data_dir, SITE)
    print(f"crawl job (recrawl, then worker --once) in the container: {job.seconds:.1f} s; {job.stdout.strip()}")
    assert job.returncode == 0, f"{job.stdout}\n{job.stderr}"
    return server, data_dir, job, server.requests[requests_before:]


def test_the_image_is_configured_for_the_worker(image) -> None:  # type: ignore[no-untyped-def]
    config = image["Config"]
    assert config["Entrypoint"] == ["helppuff"] and config["Cmd"] == ["worker"]
    assert config["User"] == "helppuff"
    assert "/data" in (config.get("Volumes") or {})
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["HELPPUFF_DATA_DIR"] == "/data"
    for key, value in {"OMP_WAIT_POLICY": "PASSIVE", "HF_HUB_OFFLINE": "1", "WRANGLER_SEND_METRICS": "false",
                       "CLOUDFLARE_CF_FETCH_ENABLED": "false"}.items():
        assert env[key] == value, key


def test_the_image_holds_chromium_and_the_local_default_model(tmp_path: Path) -> None:
    """Offline, as the image's user: Debian's chromium answers, multilingual-e5-small embeds a text, and
    MiniLM (the `local` extra, with torch) is not in the image: "no such model", as Workers AI says it."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    data_dir.chmod(0o777)
    script = (
        "import importlib.util, json, subprocess\n"
        "from helppuff_crawl.settings import HELPPUFF_CHROMIUM\n"
        "out = {'chromium': subprocess.run([HELPPUFF_CHROMIUM, '--version'], capture_output=True, text=True).stdout}\n"
        "out['torch'] = importlib.util.find_spec('torch') is not None\n"
        "from helppuff_crawl.local.ai import LocalAI\n"
        "from helppuff_crawl.local.errors import AIError\n"
        "ai = LocalAI()\n"
        "out['e5'] = len(ai.run('@local/multilingual-e5-small', {'text': ['Hot water repairs']})['data'][0])\n"
        "try:\n"
        "    ai.run('@local/all-minilm-l6-v2', {'text': ['Hot water repairs']})\n"
        "except AIError as exc:\n"
        "    out['minilm'] = [exc.code, exc.message]\n"
        "print(json.dumps(out))\n"
    )
    job = run_container(data_dir, "-c", script, entrypoint="python3")
    assert job.returncode == 0, job.stderr
    out = json.loads(job.stdout.strip().splitlines()[-1])
    assert out["chromium"].startswith("Chromium "), out
    assert out["e5"] == 384 and out["torch"] is False, out
    assert out["minilm"] == [5007, "No such model @local/all-minilm-l6-v2 or task"], out


def test_the_crawl_job_learns_the_site(crawled) -> None:  # type: ignore[no-untyped-def]
    server, data_dir, job, requests = crawled
    kb = data_dir
    runs = kb_rows(kb, "SELECT status, reason, start_url, pages_ok FROM crawl_runs WHERE site = ? ORDER BY started_at",
                   SITE)
    assert [r["status"] for r in runs] == ["done", "done"], runs  # the first crawl, then the worker's
    assert len(job.stdout.strip().splitlines()) == 1, job.stdout  # one job taken, one line
    learned = kb_rows(kb, "SELECT url FROM pages WHERE site = ? AND status IN ('ok', 'unchanged')", SITE)
    assert len(learned) >= MIN_LEARNED, learned
    chunks = kb_rows(kb, "SELECT COUNT(*) AS n FROM chunks WHERE site = ?", SITE)[0]["n"]
    assert chunks >= len(learned)
    urls = {row["url"].removeprefix(server.url) for row in learned}
    assert {"", "/pricing", "/services/hot-water", "/contact"} <= urls, urls
    # Its content is built by a script: learned only when the container's Chromium rendered it.
    assert "/quote-calculator" in urls, kb_rows(kb, "SELECT status, reason FROM pages WHERE url = ?",
                                                server.url + "/quote-calculator")


def test_the_job_runs_as_the_images_user_not_root(crawled) -> None:  # type: ignore[no-untyped-def]
    server, data_dir, job, requests = crawled
    assert job.inspect["Config"]["User"] == "helppuff"
    database = data_dir / "d1" / "helppuff.sqlite3"
    assert database.stat().st_uid == IMAGE_UID  # written by the crawl's own process
    ids = docker("run", "--rm", "--network", "host", "--entrypoint", "id", IMAGE).stdout
    assert ids.startswith(f"uid={IMAGE_UID}(helppuff) gid={IMAGE_UID}(helppuff)"), ids


def test_the_job_uses_the_host_network_and_only_loopback(crawled) -> None:  # type: ignore[no-untyped-def]
    server, data_dir, job, requests = crawled
    assert job.inspect["HostConfig"]["NetworkMode"] == "host"
    assert set(job.inspect["NetworkSettings"]["Networks"]) == {"host"}
    pages = kb_rows(data_dir, "SELECT url FROM pages WHERE site = ?", SITE)
    assert pages and all(p["url"].startswith(server.url) for p in pages)
    # Every response the crawls had (Chromium's included) came from the loopback site, and every
    # page that failed was answered by it: no request went anywhere else.
    responses = 0
    for row in kb_rows(data_dir, "SELECT stats FROM crawl_runs WHERE site = ?", SITE):
        stats = json.loads(row["stats"])
        responses += sum(v for k, v in stats.items() if k.startswith("downloader/response_status_count/"))
    assert 0 < responses <= len(requests), (responses, len(requests))
    failed = kb_rows(data_dir, "SELECT url, reason, http_status FROM pages WHERE site = ? AND status = 'failed'", SITE)
    assert all(row["http_status"] or "redirect loop" in row["reason"] for row in failed), failed


def test_a_search_in_the_container_finds_the_right_page(crawled, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server, data_dir, job, requests = crawled
    config = tmp_path / "config"
    config.mkdir()
    (config / "helppuff.json").write_text(json.dumps({"backend": {"allowNoOrigin": True}}), encoding="utf-8")
    config.chmod(0o755)
    settings = run_container(data_dir, "settings", "set", "/config/helppuff.json", "--site", SITE,
                             mounts=(f"{config}:/config:ro",))
    assert settings.returncode == 0, settings.stderr
    port = free_port()
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(data_dir), "CLOUDFLARE_API_TOKEN": "", "CLOUDFLARE_ACCOUNT_ID": ""}
    with serving(data_dir, env, tmp_path, port):
        found = run_container(data_dir, "search", "do you fix Rinnai heat-pump systems?", "--site", SITE,
                              "--url", f"http://127.0.0.1:{port}", "--json")
    assert found.returncode == 0, found.stderr
    passages = json.loads(found.stdout)["passages"]
    assert passages, found.stdout
    assert passages[0]["url"].removeprefix(server.url) == "/services/hot-water", [p["url"] for p in passages]
    assert "Rinnai" in passages[0]["text"]
