"""A Cloudflare error reaches the operator as one line with Cloudflare's code and message, and exit
status 1, never a traceback: `helppuff` commands run as an operator runs them, against a fake
Cloudflare API on loopback that knows no route (so whichever call a command makes first is refused
with Cloudflare's 404, code 7003)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from helppuff_crawl.cloudflare.state import DeployState
from tests.fake_cloudflare import FakeCloudflare

ROOT = Path(__file__).resolve().parent.parent
HELPPUFF = str(Path(sys.executable).parent / "helppuff")
DATABASE = "5f0c9a52-7a4e-4c55-9f8e-3c1f2b7d9a10"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeCloudflare]:
    with FakeCloudflare() as server:
        yield server


def _run(fake: FakeCloudflare, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    DeployState(tmp_path / "kb").record_database("acc", "helppuff", DATABASE)  # as `helppuff deploy` leaves it
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "token",
           "CLOUDFLARE_ACCOUNT_ID": "acc", "HELPPUFF_CLOUDFLARE_API_BASE": fake.url, "HELPPUFF_D1_DATABASE": "helppuff"}
    return subprocess.run([HELPPUFF, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False,
                          timeout=120)


@pytest.mark.parametrize("args", [
    ("status", "--json"),
    ("knowledge", "status", "--site", "acme", "--json"),
    ("leads", "list", "--site", "acme"),
    ("settings", "show", "--site", "acme"),
], ids=lambda args: " ".join(args[:2]))
def test_a_command_prints_the_cloudflare_error_on_one_line(fake: FakeCloudflare, tmp_path: Path,
                                                          args: tuple[str, ...]) -> None:
    before = len(fake.requests)
    result = _run(fake, tmp_path, *args)
    assert len(fake.requests) > before  # the command did reach the API
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"helppuff {args[0]}: ")
    assert ": HTTP 404: 7003: Could not route to /client/v4/accounts/acc/" in lines[0]
    assert result.returncode == 1


def test_a_crawl_says_why_it_did_not_start_without_a_traceback(fake: FakeCloudflare, tmp_path: Path,
                                                              serve_site) -> None:  # type: ignore[no-untyped-def]
    site = serve_site("northside-dental")
    result = _run(fake, tmp_path, "crawl", site.url, "--site", "dental", "--render-js", "never")
    assert "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("helppuff crawl: the crawl did not start a run: ")
    assert "HTTP 404: 7003: Could not route to /client/v4/accounts/acc/" in last
    assert result.returncode == 1
