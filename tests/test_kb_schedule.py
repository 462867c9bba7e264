"""Scheduled recrawls: which sites are due (a pure decision, table-tested), and `helppuff
schedule` crawling the due one of three sites on the local knowledge base."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from helppuff_crawl.clock import iso, parse_iso, utc_now
from helppuff_crawl.kb import schedule
from helppuff_crawl.kb.schedule import decide, site_schedule
from tests.conftest import kb_rows, run_helppuff

# The decide and site_schedule cases the Worker's port runs too (worker/test/schedule.test.ts).
CASES = json.loads((Path(schedule.__file__).parent.parent / "schema" / "schedule_cases.json").read_text())
NOW = parse_iso(CASES["now"])
DONE_8_DAYS_AGO = CASES["runs"]["done 8 days ago"]
REQUEST = CASES["requests"]["asked 3 times, never sent"]


def _named(table: str, name: str | None) -> dict[str, Any] | None:
    return None if name is None else CASES[table][name]


@pytest.mark.parametrize("case", CASES["decide"], ids=[f"{c['schedule']}, {c['last']}, {c.get('requested')}"
                                                       for c in CASES["decide"]])
def test_decide(case: dict[str, Any]) -> None:
    got = decide(case["schedule"], _named("runs", case["last"]), _named("runs", case["last_done"]), NOW,
                 _named("requests", case.get("requested")))
    assert got == (case["due"], case["why"])


@pytest.mark.parametrize("case", CASES["site_schedule"], ids=[str(c["text"]) for c in CASES["site_schedule"]])
def test_site_schedule(case: dict[str, Any]) -> None:
    assert site_schedule(case["text"])[0] == case["schedule"]


def test_schedule_crawls_the_due_site_only(serve_site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    config = tmp_path / "helppuff.json"
    config.write_text(json.dumps({"knowledge": {"website": {"schedule": "weekly", "renderJs": "never"}}}))
    assert run_helppuff(tmp_path, "settings", "set", str(config), "--site", "acme").returncode == 0
    first = run_helppuff(tmp_path, "crawl", server.url, "--site", "acme", "--config", str(config),
                         "-s", "HELPPUFF_QUEUE_RETRIES=false")  # no retry job of its failed pages
    assert first.returncode == 0, first.stderr
    yesterday = iso(utc_now() - timedelta(days=1))
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as db:
        # acme's crawl was 8 days ago; "recent" finished yesterday; "quiet" is never recrawled.
        db.execute("UPDATE crawl_runs SET started_at = '2026-11-01T10:00:00Z', finished_at = '2026-11-01T10:05:00Z'")
        for site, finished in (("recent", yesterday), ("quiet", "2026-11-01T10:05:00Z")):
            db.execute("INSERT INTO crawl_runs (id, site, start_url, status, started_at, finished_at, heartbeat_at) "
                       "VALUES (?, ?, 'http://127.0.0.1:9/', 'done', ?, ?, ?)", [f"run-{site}", site, finished,
                                                                               finished, finished])
        db.execute("INSERT INTO site_settings (site, settings, updated_at) VALUES "
                   "('quiet', '{\"knowledge\": {\"website\": {\"schedule\": \"never\"}}}', '2026-11-01T10:00:00Z')")
    planned = json.loads(run_helppuff(tmp_path, "schedule", "--dry-run", "--json").stdout)
    assert [(p["site"], p["due"], p["schedule"]) for p in planned] == [
        ("acme", True, "weekly"), ("quiet", False, "never"), ("recent", False, "weekly")]
    assert len(kb_rows(tmp_path / "kb", "SELECT id FROM crawl_runs WHERE site = 'acme'")) == 1  # dry run: nothing

    scheduled = run_helppuff(tmp_path, "schedule", "--crawl", "-s", "HELPPUFF_QUEUE_RETRIES=false")
    assert scheduled.returncode == 0, scheduled.stdout + scheduled.stderr
    lines = scheduled.stdout.splitlines()
    assert lines[0].startswith("acme: due: last crawled") and "; queued: job " in lines[0]
    job = lines[0].rsplit(" ", 1)[1]
    next_due = iso(parse_iso(yesterday) + timedelta(days=7))
    assert lines[1:3] == ["quiet: not due: schedule: never", f"recent: not due: next crawl due {next_due} (weekly)"]
    # Then the queued job, run as `helppuff worker --once` runs it.
    assert lines[3].startswith(f"job {job} (acme, full): run ") and "done (finished)" in lines[3] and len(lines) == 4
    runs = kb_rows(tmp_path / "kb", "SELECT status, started_at FROM crawl_runs WHERE site = 'acme' ORDER BY started_at")
    assert [run["status"] for run in runs] == ["done", "done"] and runs[1]["started_at"] > "2026-11-01"
    # The stored helppuff.json was the crawl's config: renderJs never.
    assert kb_rows(tmp_path / "kb", "SELECT COUNT(*) AS n FROM pages WHERE site = 'acme' AND rendered = 1")[0]["n"] == 0
    # Crawled now: not due again.
    again = json.loads(run_helppuff(tmp_path, "schedule", "--dry-run", "--json").stdout)
    assert again[0]["due"] is False and again[0]["why"].startswith("next crawl due")
    # Until the site asks for a recrawl (as the Worker's POST /v1/sites/acme/recrawl records it).
    with sqlite3.connect(tmp_path / "kb" / "d1" / "helppuff.sqlite3") as db:
        db.execute("INSERT INTO crawl_requests (id, site, urls, asked, requested_at, last_at) "
                   "VALUES ('q1', 'acme', '[]', 2, ?, ?)", [iso(utc_now()), iso(utc_now())])
    # A request saved but never sent (the queue was unreachable) is due, and sent now.
    requested = run_helppuff(tmp_path, "schedule", "--crawl", "-s", "HELPPUFF_QUEUE_RETRIES=false")
    assert requested.returncode == 0, requested.stdout + requested.stderr
    assert requested.stdout.startswith("acme: due: a recrawl was requested less than an hour ago (2 times); queued: job q1")
    assert "job q1 (acme, full): run " in requested.stdout
    latest = kb_rows(tmp_path / "kb", "SELECT id FROM crawl_runs WHERE site = 'acme' ORDER BY started_at DESC, id DESC")[0]
    handled = kb_rows(tmp_path / "kb", "SELECT handled_at, run_id FROM crawl_requests WHERE id = 'q1'")[0]
    assert handled["handled_at"] and handled["run_id"] == latest["id"]


def test_a_job_already_queued_is_not_due_again() -> None:
    queued = {**REQUEST, "queued_for": "2026-11-30T09:00:00Z"}
    assert decide("weekly", DONE_8_DAYS_AGO, DONE_8_DAYS_AGO, NOW, queued) == (
        False, "a crawl job is queued (request q1, asked 3 hours ago (3 times))")
