"""The owner's dashboard end to end, in real headless Chromium (tests/dashboard_end_to_end_check.py, in a
subprocess), against `helppuff serve` with its crawl worker, on a knowledge base that has never seen the
site (the Acme site on a real HTTP server on loopback): every step of issue 28's "done when", from the
login to the logout, with the local D1 checked for what the clicks did. Screenshots of each page at 375
and 1280 px are written to the test's folder (HELPPUFF_SCREENSHOTS: a folder to keep them in)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.dashboard_end_to_end_check import ANSWER_TEXT, GAP_ANSWER, NEW_PHONE, UNTICKED
from tests.devloop import HELPPUFF, ROOT, free_port, serving
from tests.docgen import pdf_bytes
from tests.test_widget_browser import CHROMIUM, _playwright_available

TOKEN = "owner-0123456789abcdef"
XSS = "<img src=x onerror=alert(1)>"
EXTRAS = pdf_bytes([["Acme Plumbing extra services", "Boiler flush: $140, about an hour on site.",
                     "Water filter fitting: from $220."]], title="Acme extra services")


def _rows(database: Path, sql: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(database) as db:
        rows = db.execute(sql).fetchall()
    db.close()
    return rows


def test_the_owner_sets_up_learns_answers_and_follows_up_from_a_browser(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if not CHROMIUM.exists() or not _playwright_available():
        pytest.skip("needs /usr/bin/chromium and Python Playwright (installed with scrapy-playwright)")
    site = serve_site("acme-plumbing")
    data_dir = tmp_path / "kb"
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(data_dir), "CLOUDFLARE_API_TOKEN": "", "CLOUDFLARE_ACCOUNT_ID": ""}
    for command, stdin in ((["status"], None), (["secret", "set", "OWNER_TOKEN"], TOKEN)):
        done = subprocess.run([HELPPUFF, *command], cwd=ROOT, env=env, input=stdin, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    name = "127-0-0-1-" + site.url.rstrip("/").rsplit(":", 1)[1]
    database = data_dir / "d1" / "helppuff.sqlite3"
    with sqlite3.connect(database) as db:  # a callback request, as the chat records one
        db.execute("INSERT INTO leads (id, site, name, phone, need, excerpt, source, created_at) VALUES "
                   "('lead-1', ?, ?, '0400 111 222', 'A leaking tap', ?, 'chat', '2026-12-04T09:00:00Z')",
                   [name, XSS, f"Visitor: {XSS}"])
    db.close()
    pdf = tmp_path / "extra-services.pdf"
    pdf.write_bytes(EXTRAS)
    shots = Path(os.environ.get("HELPPUFF_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    port = free_port()
    worker_url = f"http://127.0.0.1:{port}"
    with serving(data_dir, env, tmp_path, port, worker=True) as served:
        run = subprocess.run([sys.executable, "-m", "tests.dashboard_end_to_end_check", worker_url, TOKEN, site.url,
                              str(pdf), str(shots)], cwd=ROOT, capture_output=True, text=True, check=False, timeout=1500)
        assert run.returncode == 0, run.stderr
        seen = json.loads(run.stdout.strip().splitlines()[-1])
        assert "failure" not in seen, f"{seen['failure']}\n{json.dumps(seen, indent=1)[:6000]}\n{run.stderr[-3000:]}\n{served.logs()[-6000:]}"
    report = json.dumps(seen, indent=1)[:8000]
    assert seen["page_errors"] == [] and seen["console_errors"] == [], report  # no CSP violation either
    assert seen["site"] == name
    assert all(width <= 375 for width in seen["widths"].values()), seen["widths"]

    # Set up: found as a job, one page unticked, the crawl honours it.
    assert "Waiting for a crawl worker" in seen["setup_waiting"] or "A crawl worker is looking now" in seen["setup_waiting"]
    assert UNTICKED in seen["setup_pages"] and "/pricing" in seen["setup_pages"], report
    assert _rows(database, f"SELECT ticked, tick_reason FROM pages WHERE site = '{name}' AND url LIKE '%{UNTICKED}'") == [
        (0, f"exclude glob '{UNTICKED}'")]
    assert _rows(database, f"SELECT status FROM crawl_runs WHERE site = '{name}' ORDER BY started_at LIMIT 1") == [("done",)]
    # Knowledge: a failed page tried again.
    assert seen["failed_pages"] and "crawl job" in seen["try_again_notice"], report
    assert _rows(database, "SELECT kind FROM crawl_requests WHERE instr(reason, 'owner: try again from the dashboard') > 0")
    # Own answers: in the chat's answer within seconds of adding.
    assert ANSWER_TEXT.split(":")[1].strip()[:20] in seen["answer_chat"], report
    assert seen["answer_chat_seconds"] < 120, report
    # Files: learned, its text found by the search.
    assert any(url.startswith("helppuff://file/") for url in seen["file_search"]), report
    # Questions: one answered (an own answer), one dismissed.
    handled = {"Do you install tankless water heaters?", "Can you fix my car?"}
    assert handled <= set(seen["questions"]) and not handled & set(seen["questions_after"]), report
    states = dict(_rows(database, f"SELECT question, state FROM knowledge_gaps WHERE site = '{name}'"))
    assert {question: states[question] for question in handled} == {"Do you install tankless water heaters?": "answered",
                                                                     "Can you fix my car?": "dismissed"}
    assert _rows(database, f"SELECT text FROM own_answers WHERE title = 'Do you install tankless water heaters?'") == [(GAP_ANSWER,)]
    # Leads: the visitor's markup shown as text, marked done.
    assert seen["leads"] == [f"{XSS}: A leaking tap"] and seen["lead_notice"] == "Marked done."
    assert _rows(database, "SELECT handled_at IS NOT NULL FROM leads") == [(1,)]
    # Settings: the new phone in the chat's next answer.
    assert NEW_PHONE in seen["phone_chat"] and seen["phone_before"] != NEW_PHONE, report
    assert seen["phone_before"].replace(" ", "")[-8:] not in seen["phone_chat"].replace(" ", ""), report  # the old one gone
    # Logged out: the pages send to the login.
    assert seen["after_logout_url"] == f"{worker_url}/admin/login"
    names = sorted(path.name for path in shots.glob("*.png"))
    assert names == sorted(f"{page}-{width}.png" for page in ("login", "sites", "setup", "knowledge", "answers", "files",
                                                              "questions", "leads", "settings") for width in (375, 1280))
    if not os.environ.get("HELPPUFF_SCREENSHOTS"):
        shutil.rmtree(shots)
