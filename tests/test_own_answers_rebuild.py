"""What the crawler does with the own answers the owner's dashboard changed in D1 (worker/src/answers.ts
edits and removes them there and asks for a crawl job of the site's start page): the job's crawl, run
by a real `helppuff worker` on the local cloud (real SQLite, the local embedding model), learns an
edited answer as it is now and stamps its chunks with the version they hold, takes out the passages
and vectors of removed ones, and leaves the knowledge base consistent."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import kb_rows

HELPPUFF = str(Path(sys.executable).parent / "helppuff")
ROOT = Path(__file__).parent.parent
PREFIX = "helppuff://answers/"


def _helppuff(tmp_path: Path, *args: str) -> str:
    env = {**os.environ, "HELPPUFF_DATA_DIR": str(tmp_path / "kb"), "CLOUDFLARE_API_TOKEN": "",
           "CLOUDFLARE_ACCOUNT_ID": "", "HELPPUFF_EMBED_MODEL": "@local/all-minilm-l6-v2",
           "HELPPUFF_QUEUE_RETRIES": "false"}
    done = subprocess.run([HELPPUFF, *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _add(tmp_path: Path, title: str, text: str) -> str:
    return _helppuff(tmp_path, "knowledge", "add", "--site", "acme", "--title", title, "--text", text).split("own answer ")[1].split()[0]


def _chunks(tmp_path: Path, answer_id: str) -> list[dict[str, Any]]:
    return kb_rows(tmp_path / "kb", "SELECT c.id, c.text, c.updated_at, v.state FROM chunks c LEFT JOIN vectors v "
                                    "ON v.id = c.id WHERE c.site = 'acme' AND c.url = ? ORDER BY c.seq",
                   PREFIX + answer_id)


def _vectors(tmp_path: Path, ids: list[str]) -> list[dict[str, Any]]:
    marks = ", ".join("?" for _ in ids)
    return kb_rows(tmp_path / "kb", f"SELECT id, state FROM vectors WHERE id IN ({marks})", *ids)


def test_a_crawl_job_relearns_edited_answers_and_drops_removed_ones(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    _helppuff(tmp_path, "crawl", server.url, "--site", "acme", "--render-js", "never")
    edited = _add(tmp_path, "Is there parking?", "Yes: two free spaces behind the workshop.")
    unchanged = _add(tmp_path, "Do you take cards?", "Visa and Mastercard, no surcharge.")
    removed = _add(tmp_path, "Do you work weekends?", "Saturdays until noon, for emergencies only.")
    left = _add(tmp_path, "Do you sell parts?", "Yes, over the counter at the workshop.")
    old = {answer: [row["id"] for row in _chunks(tmp_path, answer)] for answer in (edited, removed, left)}
    assert all(old.values())

    # As the dashboard writes it: an edit (a new updated_at), an edit that changed nothing in the text,
    # and a removal (the row, its chunks, its vectors marked for deleting, one transaction). `left`
    # lost its row only, its passages still there (a removal whose chunks were not taken out).
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as db:
        db.execute("UPDATE own_answers SET text = 'Yes: four free spaces on Lane Street, behind the workshop.', "
                   "updated_at = '2099-01-01T00:00:00Z' WHERE id = ?", [edited])
        db.execute("UPDATE own_answers SET updated_at = '2099-01-01T00:00:01Z' WHERE id = ?", [unchanged])
        db.execute("UPDATE vectors SET state = 'deleting' WHERE id IN (SELECT id FROM chunks WHERE site = 'acme' AND url = ?)",
                   [PREFIX + removed])
        db.execute("DELETE FROM chunks WHERE site = 'acme' AND url = ?", [PREFIX + removed])
        db.execute("DELETE FROM own_answers WHERE id IN (?, ?)", [removed, left])
    asked = _helppuff(tmp_path, "recrawl", "--site", "acme", server.url + "/")
    assert asked.startswith("job ")
    done = _helppuff(tmp_path, "worker", "--once")
    assert "(acme, urls, " in done and ": done (finished)" in done

    relearned = _chunks(tmp_path, edited)
    assert relearned and "four free spaces on Lane Street" in " ".join(row["text"] for row in relearned)
    assert "two free spaces" not in " ".join(row["text"] for row in relearned)
    assert {(row["updated_at"], row["state"]) for row in relearned} == {("2099-01-01T00:00:00Z", "live")}
    assert _vectors(tmp_path, [i for i in old[edited] if i not in {row["id"] for row in relearned}]) == []
    assert {row["updated_at"] for row in _chunks(tmp_path, unchanged)} == {"2099-01-01T00:00:01Z"}
    for gone in (removed, left):
        assert _chunks(tmp_path, gone) == []
        assert _vectors(tmp_path, old[gone]) == []
    status = json.loads(_helppuff(tmp_path, "knowledge", "status", "--site", "acme", "--json"))["sites"][0]
    assert status["consistency"]["consistent"], status["consistency"]
