"""`helppuff settings ...` and `helppuff leads ...`, run as an operator runs them, on the local
knowledge base (real SQLite, the Worker's migrations)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.conftest import run_helppuff

ROOT = Path(__file__).resolve().parent.parent
HELPPUFF = str(Path(sys.executable).parent / "helppuff")




def _db(tmp_path: Path) -> sqlite3.Connection:
    return sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3")


# -- settings ----------------------------------------------------------------------------------------------


def test_settings_are_stored_for_the_worker_and_shown(tmp_path: Path) -> None:
    none = run_helppuff(tmp_path, "settings", "show", "--site", "acme")
    assert none.returncode == 0 and "no settings stored; the Worker uses its defaults" in none.stdout
    config = {"backend": {"prompt": "You are Acme's assistant.", "retrieval": {"finalK": 5},
                          "allowedOrigins": ["https://acme.com.au", "http://localhost:3000"]}}
    path = tmp_path / "helppuff.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    stored = run_helppuff(tmp_path, "settings", "set", str(path), "--site", "acme")
    assert stored.returncode == 0, stored.stderr
    with _db(tmp_path) as conn:
        (text,) = conn.execute("SELECT settings FROM site_settings WHERE site = 'acme'").fetchone()
    assert json.loads(text) == config  # the row the Worker reads
    shown = json.loads(run_helppuff(tmp_path, "settings", "show", "--site", "acme", "--json").stdout)
    assert shown["settings"] == config and shown["updated_at"]
    # Stored again from stdin: replaced, not added to.
    again = run_helppuff(tmp_path, "settings", "set", "-", "--site", "acme", stdin='{"allowNoOrigin": true}')
    assert again.returncode == 0, again.stderr
    assert json.loads(run_helppuff(tmp_path, "settings", "show", "--site", "acme", "--json").stdout)["settings"] == {
        "allowNoOrigin": True}


def test_config_pull_writes_the_live_settings_back_into_the_file(tmp_path: Path) -> None:
    missing = run_helppuff(tmp_path, "config", "pull", str(tmp_path / "helppuff.json"), "--site", "acme")
    assert missing.returncode == 2 and "acme has no stored settings" in missing.stderr
    live = {"backend": {"prompt": "You are Acme's assistant.", "retrieval": {"finalK": 5}},
            "knowledge": {"website": {"maxPages": 50}}}
    assert run_helppuff(tmp_path, "settings", "set", "-", "--site", "acme", stdin=json.dumps(live)).returncode == 0
    path = tmp_path / "helppuff.json"
    path.write_text(json.dumps({"backend": {"prompt": "Old prompt.", "retrieval": {"finalK": 5}},
                                "knowledge": {"website": {"maxPages": 50, "renderJs": "never"}}}), encoding="utf-8")
    pulled = run_helppuff(tmp_path, "config", "pull", str(path), "--site", "acme")
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.strip() == f"{path}: the live settings of acme; changed: backend.prompt, knowledge.website.renderJs"
    assert json.loads(path.read_text(encoding="utf-8")) == live
    assert run_helppuff(tmp_path, "config", "check", str(path)).stdout.strip() == f"{path}: fine"
    again = run_helppuff(tmp_path, "config", "pull", str(path), "--site", "acme")
    assert again.stdout.strip() == f"{path}: already the live settings of acme"
    shown = run_helppuff(tmp_path, "config", "pull", "-", "--site", "acme")
    assert json.loads(shown.stdout) == live


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{not json", "not JSON: Expecting property name"),
        ("[1, 2]", "(the file): [1, 2] is not of type 'object'"),
        ('{"backend": "x"}', "backend: 'x' is not of type 'object'"),
        ('{"backend": {"allowedOrigins": "https://acme.com.au"}}', "backend.allowedOrigins: 'https://acme.com.au' is not of type 'array'"),
        ('{"allowedOrigins": ["https://acme.com.au/contact"]}',
         "allowedOrigins.0: 'https://acme.com.au/contact' is not an origin: a scheme and a host, no path"),
        ('{"backend": {"allowedOrigins": ["acme.com.au"]}}', "backend.allowedOrigins.0: 'acme.com.au' is not an origin"),
        ('{"prompt": "Hi"}', '(\'prompt\' was unexpected) (the answering settings go inside "backend": {...})'),
    ],
)
def test_bad_settings_are_refused_and_nothing_is_stored(tmp_path: Path, text: str, error: str) -> None:
    result = run_helppuff(tmp_path, "settings", "set", "-", "--site", "acme", stdin=text)
    assert result.returncode == 2 and error in result.stderr, result.stderr
    assert "no settings stored" in run_helppuff(tmp_path, "settings", "show", "--site", "acme").stdout


def test_a_missing_settings_file_is_a_clear_error(tmp_path: Path) -> None:
    result = run_helppuff(tmp_path, "settings", "set", str(tmp_path / "nope.json"), "--site", "acme")
    assert result.returncode == 2 and "nope.json: no such file" in result.stderr


# -- leads -------------------------------------------------------------------------------------------------

LEADS = [
    # id, site, name, phone, email, need, source, created_at, handled_at, notified_at, notify_error
    ("aaaa1111-0000", "acme", "Sam", "0412 345 678", "", "Blocked drain in the kitchen", "chat",
     "2026-11-30T09:00:00Z", None, "2026-11-30T09:00:01Z", None),
    ("aaaa2222-0000", "acme", "", "", "jo@example.com", "Quote for a hot water system", "budget",
     "2026-11-30T10:00:00Z", None, None, "HTTP 500 after 2 attempts"),
    ("bbbb3333-0000", "acme", "Lee", "0400 000 000", "", "Leaking tap", "chat",
     "2026-11-29T08:00:00Z", "2026-11-29T12:00:00Z", None, None),
    ("cccc4444-0000", "other", "Kim", "0411 111 111", "", "Not acme's", "chat",
     "2026-11-30T11:00:00Z", None, None, None),
]


def _seed_leads(tmp_path: Path) -> None:
    assert run_helppuff(tmp_path, "leads", "list", "--site", "acme").returncode == 0  # creates the database
    with _db(tmp_path) as conn:
        conn.executemany(
            "INSERT INTO leads (id, site, name, phone, email, need, source, created_at, handled_at, notified_at, "
            "notify_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", LEADS)


def test_open_leads_newest_first_with_their_webhook_delivery(tmp_path: Path) -> None:
    _seed_leads(tmp_path)
    listing = run_helppuff(tmp_path, "leads", "list", "--site", "acme")
    assert listing.returncode == 0, listing.stderr
    assert listing.stdout.splitlines() == [
        "acme: 2 open leads",
        "2026-11-30 10:00  jo@example.com  [budget, open]  id aaaa2222",
        "  needs: Quote for a hot water system",
        "  webhook: not delivered: HTTP 500 after 2 attempts",
        "2026-11-30 09:00  Sam  0412 345 678  [chat, open]  id aaaa1111",
        "  needs: Blocked drain in the kitchen",
        "  webhook: delivered 2026-11-30 09:00",
    ]
    everything = json.loads(run_helppuff(tmp_path, "leads", "list", "--site", "acme", "--all", "--json").stdout)
    assert [lead["id"] for lead in everything] == ["aaaa2222-0000", "aaaa1111-0000", "bbbb3333-0000"]
    assert everything[2]["handled_at"] == "2026-11-29T12:00:00Z"


def test_leads_are_marked_handled_by_id_prefix(tmp_path: Path) -> None:
    _seed_leads(tmp_path)
    ambiguous = run_helppuff(tmp_path, "leads", "done", "aaaa", "--site", "acme")
    assert ambiguous.returncode == 2 and "2 leads of acme start with that" in ambiguous.stderr
    unknown = run_helppuff(tmp_path, "leads", "done", "cccc4444", "--site", "acme")  # another site's lead
    assert unknown.returncode == 2 and "no lead of acme has that id" in unknown.stderr
    done = run_helppuff(tmp_path, "leads", "done", "aaaa2222", "AAAA1111-0000", "--site", "acme")
    assert done.returncode == 0 and "2 leads marked handled" in done.stdout, done.stderr
    assert run_helppuff(tmp_path, "leads", "list", "--site", "acme").stdout == "acme: no open leads\n"
    with _db(tmp_path) as conn:
        handled = dict(conn.execute("SELECT id, handled_at FROM leads").fetchall())
    assert handled["aaaa1111-0000"] and handled["aaaa2222-0000"]
    assert handled["bbbb3333-0000"] == "2026-11-29T12:00:00Z"  # already handled: left as it was
    assert handled["cccc4444-0000"] is None


def test_status_counts_the_open_leads(tmp_path: Path) -> None:
    _seed_leads(tmp_path)
    status = json.loads(run_helppuff(tmp_path, "knowledge", "status", "--site", "acme", "--json").stdout)
    assert status["sites"][0]["owner"]["open_leads"] == 2  # the handled one and other site's are not counted
