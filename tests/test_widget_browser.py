"""The chat widget in a real browser, end to end: `helppuff crawl` the Acme site (a real HTTP server on
loopback) into a fresh knowledge base, allow the Worker's own origin for the site in the local D1,
`helppuff serve` the Worker on it, and drive the demo page in headless Chromium
(tests/widget_browser_check.py, in a subprocess: Playwright's sync API cannot run beside this
process's asyncio reactor). The local cloud has no chat model, so the chat answers extractively.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helppuff_crawl.deploy.toolchain import DevServerError, find_toolchain
from tests.devloop import ROOT, crawl_into, free_port, serving

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = Path("/tmp/widget.png")


def _playwright_available() -> bool:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return True


def test_widget_answers_cites_and_takes_a_callback(serve_site, tmp_path) -> None:  # type: ignore[no-untyped-def]
    try:
        find_toolchain()
    except DevServerError as exc:
        pytest.skip(f"{exc} (scripts/test-worker.sh installs it)")
    if not CHROMIUM.exists() or not _playwright_available():
        pytest.skip("needs /usr/bin/chromium and Python Playwright (installed with scrapy-playwright)")

    site = serve_site("acme-plumbing")
    data_dir = tmp_path / "kb"
    env = crawl_into(site.url, data_dir)

    port = free_port()
    worker_url = f"http://127.0.0.1:{port}"
    database = data_dir / "d1" / "helppuff.sqlite3"
    db = sqlite3.connect(database)
    try:
        with db:
            db.execute("INSERT OR REPLACE INTO site_settings (site, settings, updated_at) VALUES ('acme', ?, ?)",
                       [json.dumps({"backend": {"allowedOrigins": [worker_url]}}), "2026-01-01T00:00:00Z"])
    finally:
        db.close()

    with serving(data_dir, env, tmp_path, port) as served:
        logs = served.logs
        check = subprocess.run([sys.executable, str(ROOT / "tests" / "widget_browser_check.py"), worker_url, str(SCREENSHOT)],
                               cwd=ROOT, capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stderr
        seen = json.loads(check.stdout.strip().splitlines()[-1])
        assert "failure" not in seen, f"{seen['failure']}\n{check.stderr}\n{logs()}"

        assert seen["page_errors"] == []
        assert seen["bubble_label"] == "Open chat: Ask us"
        assert seen["panel_hidden_before"] is True
        assert seen["focus_after_open"] == "hp-question"
        assert seen["expanded_after_open"] == "true"
        assert seen["panel_hidden_after_escape"] is True
        assert seen["focus_after_escape"] == "bubble"
        assert seen["log_aria_live"] == "polite"

        # The site's own words: the emergency page's sentence or the price list's row (the list
        # quoted whole, its rows under it), cited.
        first = seen["answer_text"].split("\n• ")[1]
        assert seen["answer_text"].startswith("From the site's pages:\n• ") and "$180" in first, seen["answer_text"]
        assert {f"{site.url}/pricing", f"{site.url}/emergency-plumbing"} & set(seen["source_links"])
        assert "closest" not in seen["answer_classes"].split()
        assert "Phone: +61 3 9000 1234" in seen["phone_text"]
        # The business details' Source is the contact page, where a visitor can check them.
        assert ["Business details", f"{site.url}/contact"] in seen["phone_sources"]

        # Nothing on the site answers it: the closest passage, said to be only that, and styled apart
        # (worker/src/bands.ts), then the callback form.
        assert seen["unsure_text"].startswith("I'm not sure the site covers exactly this. The closest I found on its pages:\n• ")
        assert seen["unsure_text"].endswith("\nCan we call you back about it?")
        assert "closest" in seen["unsure_classes"].split()
        assert seen["unsure_sources_header"] == "Closest match, may not answer this exactly"
        assert seen["unsure_border"] == "dashed"
        assert seen["form_need"] == "do you sell pizza?"
        assert seen["confirmation"] == ("Thanks, Sam Citizen! I've passed this on to the team at Acme Plumbing, "
                                        "and someone will get back to you.")
        assert seen["form_gone"] is True
        assert seen["error_boxes"] == 0
        assert SCREENSHOT.stat().st_size > 10_000

        db = sqlite3.connect(database)
        try:
            leads = db.execute("SELECT site, name, phone, email, need, source FROM leads").fetchall()
        finally:
            db.close()
        assert leads == [("acme", "Sam Citizen", "0412 345 678", "", "Please call me back about: do you sell pizza?", "chat")]
