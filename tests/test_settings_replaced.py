"""A helppuff.json stored over live settings saved since the file was last changed (the dashboard's
Settings writes the same row): `helppuff settings set` and `config apply` still store the file, and
name on stderr each live field they replace with the value it had, so a dashboard change is never
undone unsaid; `config pull` first brings them into the file, and then nothing is said."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from helppuff_crawl.kb.site_settings import replaced_since, replaced_warning
from tests.conftest import run_helppuff

EARLIER = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
LATER = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
FILE = {"backend": {"prompt": "You are Acme's assistant.", "maxAnswerSentences": 4}}
DASHBOARD = {"backend": {"prompt": "You are Acme's friendly plumber.", "maxAnswerSentences": 2,
                         "retrieval": {"rerankerModel": None}}}


def test_the_fields_saved_since_the_file_changed_are_named_with_their_values() -> None:
    row = {"settings": json.dumps(DASHBOARD), "updated_at": "2026-12-02T09:00:00Z"}
    replaced = replaced_since(row, json.dumps(FILE), EARLIER)
    assert replaced == [("backend.maxAnswerSentences", 2), ("backend.prompt", "You are Acme's friendly plumber."),
                        ("backend.retrieval", {"rerankerModel": None})]
    assert replaced_since(row, json.dumps(FILE), LATER) == []  # the file is newer: nothing it did not mean
    assert replaced_since(row, json.dumps(DASHBOARD), EARLIER) == []  # the same settings: nothing replaced
    assert replaced_since(None, json.dumps(FILE), EARLIER) == []
    assert replaced_since({"settings": "not json", "updated_at": "2026-12-02T09:00:00Z"}, json.dumps(FILE), EARLIER) == []
    assert len(replaced_since(row, json.dumps(FILE), None)) == 3  # stdin: when it was written is not known
    assert replaced_warning("acme", "helppuff.json", replaced) == (
        "warning: acme: settings saved after helppuff.json was last changed (in the dashboard's Settings, or from "
        "another file) are replaced: backend.maxAnswerSentences was 2; backend.prompt was \"You are Acme's friendly "
        "plumber.\"; backend.retrieval was {\"rerankerModel\": null}. `helppuff config pull --site acme` before "
        "editing keeps them.")
    assert replaced_warning("acme", "helppuff.json", []) == ""


def _dashboard_saves(tmp_path: Path) -> None:
    """What worker/src/admin/settings.ts saveAnswering writes: the whole document, stamped now."""
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        conn.execute("UPDATE site_settings SET settings = ?, updated_at = ? WHERE site = 'acme'",
                     [json.dumps(DASHBOARD), datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")])


def test_settings_set_and_config_apply_name_the_dashboards_changes_they_replace(tmp_path: Path) -> None:
    path = tmp_path / "helppuff.json"
    path.write_text(json.dumps(FILE), encoding="utf-8")
    old = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    os.utime(path, (old, old))
    first = run_helppuff(tmp_path, "settings", "set", str(path), "--site", "acme")
    assert first.returncode == 0 and first.stderr == "", first.stderr  # nothing stored before: nothing to say

    for command in (["settings", "set", str(path)], ["config", "apply", str(path)]):
        _dashboard_saves(tmp_path)
        stored = run_helppuff(tmp_path, *command, "--site", "acme")
        assert stored.returncode == 0, stored.stderr
        assert "acme: settings stored; the Worker uses them from its next request" in stored.stdout
        assert stored.stderr.strip() == (
            f"warning: acme: settings saved after {path} was last changed (in the dashboard's Settings, or from "
            "another file) are replaced: backend.maxAnswerSentences was 2; backend.prompt was \"You are Acme's "
            "friendly plumber.\"; backend.retrieval was {\"rerankerModel\": null}. `helppuff config pull --site acme` "
            "before editing keeps them.")

    # Pulled first: the file holds the dashboard's change, and storing it replaces nothing unsaid.
    _dashboard_saves(tmp_path)
    assert run_helppuff(tmp_path, "config", "pull", str(path), "--site", "acme").returncode == 0
    again = run_helppuff(tmp_path, "settings", "set", str(path), "--site", "acme")
    assert again.returncode == 0 and again.stderr == "", again.stderr
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as conn:
        (text,) = conn.execute("SELECT settings FROM site_settings WHERE site = 'acme'").fetchone()
    assert json.loads(text) == DASHBOARD
