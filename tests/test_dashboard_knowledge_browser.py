"""The dashboard's Knowledge page in a real browser: `helppuff crawl` the Acme site (a real HTTP server on
loopback), one failed page with markup in its title and reason added to the local D1 (as a crawl records
a page it could not fetch), then `helppuff serve` and headless Chromium at 375 px
(tests/dashboard_knowledge_check.py, in a subprocess): the crawl and its pages shown, nothing wider than
the phone, the failed page's "Try again" reached by keyboard, the job it asked for shown waiting for a
crawl worker (or running, once one took it), and the local D1 holding that job."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from tests.dashboard_owner import owner_site
from tests.devloop import ROOT, free_port, serving

TOKEN = "owner-0123456789abcdef"
XSS = "<img src=x onerror=alert(1)>"


def _job(database) -> tuple[str, str] | None:  # type: ignore[no-untyped-def]
    with sqlite3.connect(database) as db:
        row = db.execute("SELECT kind, urls FROM crawl_requests WHERE site = 'acme' "
                         "AND instr(reason, 'owner: try again from the dashboard') > 0").fetchone()
    db.close()
    return row


def test_the_owner_sees_the_pages_and_tries_a_failed_one_again(serve_site, tmp_path) -> None:  # type: ignore[no-untyped-def]
    site, env, data_dir = owner_site(serve_site, tmp_path, TOKEN)
    database = data_dir / "d1" / "helppuff.sqlite3"
    failed_url = f"{site.url.rstrip('/')}/0-flaky-page"  # first of the failed pages, by address
    with sqlite3.connect(database) as db:
        learned = db.execute("SELECT count(*) FROM pages WHERE site = 'acme' "
                             "AND status IN ('ok', 'unchanged')").fetchone()[0]
        db.execute("INSERT INTO pages (site, url, title, status, reason, http_status, updated_at) "
                   "VALUES ('acme', ?, ?, 'failed', ?, 503, '2026-11-30T10:00:00Z')",
                   [failed_url, f"Flaky {XSS}", f"HTTP 503 {XSS}"])
    db.close()
    assert learned > 0

    port = free_port()
    worker_url = f"http://127.0.0.1:{port}"
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with serving(data_dir, env, tmp_path, port) as served:
        run = subprocess.run([sys.executable, "-m", "tests.dashboard_knowledge_check", worker_url, TOKEN, str(shots)],
                             cwd=ROOT, capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        seen = json.loads(run.stdout.strip().splitlines()[-1])
        assert "failure" not in seen, f"{seen['failure']}\n{run.stderr}\n{served.logs()}"

    assert seen["knowledge_url"] == f"{worker_url}/admin/sites/acme/knowledge"
    assert seen["headings"] == ["Crawl jobs", "Last crawls", "Self-check", "Today's usage", "Pages"]
    assert f"Flaky {XSS}" in seen["page_titles"] and len(seen["page_titles"]) > learned  # the markup as text
    assert seen["refreshes"] == 0, seen  # the crawl is done, no job is due
    assert seen["scroll_width"] <= 375 and seen["scroll_width_after"] <= 375
    assert seen["failed_titles"][0] == f"Flaky {XSS}"
    assert seen["tabbed"][-1] == "Try again" and seen["described_by"] == f"Flaky {XSS}"
    assert seen["notice"].startswith("A crawl job for that page was")
    # Waiting for a crawl worker, or running once one took it (or done): the page reloads itself while a
    # job is waiting or running.
    assert all(text.startswith(("Waiting for a crawl worker since ", "Running: ")) for text in seen["job"])
    assert seen["refreshes_after"] == (1 if seen["job"] else 0)
    assert seen["page_errors"] == [] and seen["console_errors"] == []  # no CSP violation either

    # The crawl's own retry of its failed pages (due later) may have been waiting: the page joins it, due now.
    job = _job(database)
    assert job is not None and job[0] == "urls" and failed_url in json.loads(job[1])
