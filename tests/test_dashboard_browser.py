"""The owner's dashboard in a real browser, end to end: `helppuff crawl` the Acme site (a real HTTP
server on loopback), `helppuff secret set OWNER_TOKEN`, a visitor's question the assistant could not
answer and a callback request in the local D1 (as the Worker records them, with markup in them), then
`helppuff serve`, and headless Chromium at 375 px (tests/dashboard_browser_check.py, in a subprocess):
log in, answer the question, mark the lead done, log out. The local D1 shows what the clicks did."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

from helppuff_crawl.kb.gaps import gap_key
from tests.dashboard_owner import owner_site
from tests.devloop import ROOT, free_port, serving

TOKEN = "owner-0123456789abcdef"
XSS = "<img src=x onerror=alert(1)>"
QUESTION = f"Is there parking {XSS}?"


def test_the_owner_logs_in_answers_a_question_and_marks_a_lead_done(serve_site, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _, env, data_dir = owner_site(serve_site, tmp_path, TOKEN)
    database = data_dir / "d1" / "helppuff.sqlite3"
    with sqlite3.connect(database) as db:
        db.execute("INSERT INTO knowledge_gaps (id, site, question, key, asked, first_asked_at, last_asked_at) "
                   "VALUES ('0a1b2c3d', 'acme', ?, ?, 2, '2026-11-24T09:00:00Z', '2026-11-24T10:00:00Z')",
                   [QUESTION, gap_key(QUESTION)])
        db.execute("INSERT INTO leads (id, site, name, phone, need, excerpt, source, created_at) VALUES "
                   "('lead-1', 'acme', ?, '0400 111 222', 'A leaking tap', ?, 'chat', '2026-11-24T11:00:00Z')",
                   [XSS, f"Visitor: {XSS}"])
    db.close()

    port = free_port()
    worker_url = f"http://127.0.0.1:{port}"
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with serving(data_dir, env, tmp_path, port) as served:
        assert f"Dashboard    {worker_url}/admin  (log in with the OWNER_TOKEN secret)" in served.out.read_text()
        check = subprocess.run([sys.executable, "-m", "tests.dashboard_browser_check", worker_url, TOKEN,
                                str(shots)], cwd=ROOT, capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stderr
        seen = json.loads(check.stdout.strip().splitlines()[-1])
        assert "failure" not in seen, f"{seen['failure']}\n{check.stderr}\n{served.logs()}"

    assert seen["login_url"] == f"{worker_url}/admin/login"
    assert seen["questions_url"] == f"{worker_url}/admin/sites/acme/questions"
    assert seen["question_texts"] == [QUESTION]  # the markup shown as text
    assert seen["scroll_width"] <= 375  # nothing wider than the phone
    assert seen["focused_after_tab"] == "Answer"
    assert seen["answer_notice"].startswith("Saved as one of your own answers.")
    assert seen["questions_after"] == []
    assert seen["lead_texts"] == [f"{XSS}: A leaking tap"] and seen["excerpt"] == [f"Visitor: {XSS}"]
    assert seen["done_notice"] == "Marked done."
    assert seen["leads_after"] == []
    assert seen["after_logout_url"] == f"{worker_url}/admin/login"
    assert seen["leads_after_logout_url"] == f"{worker_url}/admin/login"
    assert seen["page_errors"] == [] and seen["console_errors"] == []  # no CSP violation either

    with sqlite3.connect(database) as db:
        gap = db.execute("SELECT state, answer_id FROM knowledge_gaps WHERE id = '0a1b2c3d'").fetchone()
        answer = db.execute("SELECT id, title, text FROM own_answers").fetchall()
        handled = db.execute("SELECT handled_at FROM leads WHERE id = 'lead-1'").fetchone()[0]
    db.close()
    assert gap[0] == "answered" and answer == [(gap[1], QUESTION, "Yes: two free bays behind the workshop.")]
    assert handled is not None
