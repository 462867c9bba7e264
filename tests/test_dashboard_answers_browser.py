"""The dashboard's "Your own answers" in a real browser, end to end: `helppuff crawl` the Acme site (a
real HTTP server on loopback), `helppuff serve`, and headless Chromium at 375 px
(tests/dashboard_answers_browser_check.py, in a subprocess): the owner adds an answer and is told it
waits for the crawl worker (the job it asked for); a real `helppuff worker --once` runs that job; the
page then says it is searchable; the owner edits it and removes it. The local D1 shows what the clicks
and the job did: the passage learned with the answer's version, and gone, chunks and vectors, after the
removal (the Worker's D1 batch through the local cloud)."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.dashboard_answers_browser_check import EDITED, TEXT, TITLE
from tests.dashboard_owner import owner_site
from tests.devloop import HELPPUFF, ROOT, free_port, serving

TOKEN = "owner-0123456789abcdef"


def _browse(worker_url: str, shots: Path, phase: str, logs: str) -> dict[str, Any]:
    check = subprocess.run([sys.executable, "-m", "tests.dashboard_answers_browser_check", worker_url, TOKEN,
                            str(shots), phase], cwd=ROOT, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
    seen: dict[str, Any] = json.loads(check.stdout.strip().splitlines()[-1])
    assert "failure" not in seen, f"{seen['failure']}\n{check.stderr}\n{logs}"
    assert seen["page_errors"] == [] and seen["console_errors"] == []  # no CSP violation either
    return seen


def _rows(database: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(database) as db:
        rows = db.execute(sql, params).fetchall()
    db.close()
    return rows


def test_the_owner_adds_edits_and_removes_an_own_answer(serve_site, tmp_path) -> None:  # type: ignore[no-untyped-def]
    _, env, data_dir = owner_site(serve_site, tmp_path, TOKEN)
    database = data_dir / "d1" / "helppuff.sqlite3"
    port = free_port()
    worker_url = f"http://127.0.0.1:{port}"
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with serving(data_dir, env, tmp_path, port) as served:
        added = _browse(worker_url, shots, "add", served.logs())
        [(answer_id, updated_at)] = _rows(database, "SELECT id, updated_at FROM own_answers")
        [(job,)] = _rows(database, "SELECT id FROM crawl_requests WHERE handled_at IS NULL")
        ran = subprocess.run([HELPPUFF, "worker", "--once"], cwd=ROOT, env=env, capture_output=True, text=True,
                             check=False)
        assert ran.returncode == 0 and f"job {job} (acme, urls, " in ran.stdout, ran.stdout + ran.stderr
        learned = _rows(database, "SELECT c.id, c.updated_at, v.state FROM chunks c JOIN vectors v ON v.id = c.id "
                                  "WHERE c.url = ?", f"helppuff://answers/{answer_id}")
        changed = _browse(worker_url, shots, "change", served.logs())

    assert added["scroll_width"] <= 375 and added["scroll_width_after"] <= 375  # nothing wider than the phone
    assert added["focused_after_title"] == "new-text" and added["focused_after_text"] == "Add"
    assert added["add_notice"] == (f"Added “{TITLE}”: waiting for the crawl worker to learn it "
                                   f"(job {job}, asked {updated_at}).")
    assert added["titles"] == [TITLE]  # the markup shown as text
    assert learned and {(stamp, state) for _, stamp, state in learned} == {(updated_at, "live")}
    assert re.fullmatch(rf"Updated {updated_at} · searchable: the assistant uses it \(learned {updated_at}\)",
                        changed["state_after_crawl"])
    assert changed["focused_after_edit"] == "Save"
    assert changed["edit_notice"].startswith(f"Saved “{TITLE}”: waiting for the crawl worker to learn it (job ")
    assert changed["texts"] == [EDITED]
    assert changed["remove_notice"] == "Removed: the assistant no longer uses it."
    assert changed["titles_after"] == []
    assert _rows(database, "SELECT id FROM own_answers") == []
    assert _rows(database, "SELECT id FROM chunks WHERE url = ?", f"helppuff://answers/{answer_id}") == []
    # Its vectors wait, marked, for the next crawl to delete them from the index.
    ids = [chunk_id for chunk_id, _, _ in learned]
    marks = ", ".join("?" for _ in ids)
    assert _rows(database, f"SELECT DISTINCT state FROM vectors WHERE id IN ({marks})", *ids) == [("deleting",)]
    assert TEXT not in json.dumps(_rows(database, "SELECT text FROM chunks"))
