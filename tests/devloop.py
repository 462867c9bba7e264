"""Shared by the dev-loop tests: crawl a fixture site into a fresh knowledge base with
`helppuff crawl`, then run `helppuff serve` on it (in its own process group) until done."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
HELPPUFF = str(Path(sys.executable).parent / "helppuff")
READY_ATTEMPTS = 480  # each waits up to 0.5 s on the serve process itself


def stop_group(process: subprocess.Popen, grace: float) -> None:
    """Stop a process started in a session of its own, and its children: SIGTERM, then SIGKILL after `grace` s."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def skip_without_toolchain() -> None:
    """Skip the test, with the reason, when the Worker's toolchain (Node 22, wrangler) is not installed."""
    from helppuff_crawl.deploy.toolchain import DevServerError, find_toolchain

    try:
        find_toolchain()
    except DevServerError as exc:
        pytest.skip(f"{exc} (scripts/test-worker.sh installs it; CI runs it before pytest)")


def sse_events(text: str) -> list[tuple[str, dict]]:
    """The chat's server-sent events (worker/src/chat/events.ts) as (event, data) pairs, in order."""
    found = []
    for block in text.split("\n\n"):
        lines = block.splitlines()
        event = next((line[7:] for line in lines if line.startswith("event: ")), "")
        data = next((line[6:] for line in lines if line.startswith("data: ")), "")
        if event:
            found.append((event, json.loads(data or "{}")))
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def crawl_into(site_url: str, data_dir: Path, site: str = "acme") -> dict[str, str]:
    """Crawl the site (rendering off) into data_dir; returns the environment that points at it."""
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(data_dir), "CLOUDFLARE_API_TOKEN": "", "CLOUDFLARE_ACCOUNT_ID": ""}
    crawl = subprocess.run([HELPPUFF, "crawl", site_url, "--site", site, "--render-js", "never"],
                           cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert crawl.returncode == 0, crawl.stderr
    return env


def crawl_with_settings(site_url: str, data_dir: Path, settings: str, site: str = "acme") -> dict[str, str]:
    """crawl_into, then `helppuff settings set` the site's helppuff.json (`settings`, JSON text); skips
    the test when the Worker's toolchain is not installed. Returns the environment, as crawl_into."""
    from helppuff_crawl.deploy.toolchain import DevServerError, find_toolchain

    try:
        find_toolchain()
    except DevServerError as exc:
        pytest.skip(f"{exc} (scripts/test-worker.sh installs it; CI runs it before pytest)")
    env = crawl_into(site_url, data_dir, site)
    stored = subprocess.run([HELPPUFF, "settings", "set", "-", "--site", site], cwd=ROOT, env=env, input=settings,
                            capture_output=True, text=True, check=False)
    assert stored.returncode == 0, stored.stderr
    return env


@dataclass
class Served:
    process: subprocess.Popen[bytes]
    out: Path
    err: Path

    def logs(self) -> str:
        return f"stdout:\n{self.out.read_text()}\nstderr:\n{self.err.read_text()}"


@contextmanager
def serving(data_dir: Path, env: dict[str, str], logs_dir: Path, port: int, *, worker: bool = False) -> Iterator[Served]:
    """`helppuff serve` on 127.0.0.1:port, ready (polled a bounded number of times), stopped after; with its
    crawl worker only when `worker` (a test that runs `helppuff worker --once` itself needs none beside it)."""
    out, err = logs_dir / "serve.out", logs_dir / "serve.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [HELPPUFF, "serve", "--port", str(port), "--cloud-port", str(free_port()), "--data-dir", str(data_dir),
             *(() if worker else ("--no-worker",))],
            cwd=ROOT, env=env, stdout=stdout, stderr=stderr, start_new_session=True,
        )
    served = Served(process, out, err)
    try:
        for _ in range(READY_ATTEMPTS):
            if "Ready." in out.read_text():
                break
            try:
                process.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                continue
            pytest.fail(f"helppuff serve exited with {process.returncode}\n{served.logs()}")
        else:
            pytest.fail(f"helppuff serve was not ready after {READY_ATTEMPTS} polls\n{served.logs()}")
        yield served
    finally:
        stop_group(process, 60)
