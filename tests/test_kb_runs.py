"""Runs in the knowledge base: a run left "running" by a dead process is marked failed."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_twisted

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.kb import runs
from tests.conftest import local_kb, run_async


async def _scenario(tmp_path: Path) -> None:
    kb = local_kb(tmp_path)
    # A real process that has exited: its pid is gone.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    now = iso(utc_now())
    insert = ("INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at, host, pid) "
              "VALUES (?, 's', 'u', 'running', ?, ?, ?, ?)")
    await kb.query(insert, ["dead-here", now, now, socket.gethostname(), dead_pid])
    await kb.query(insert, ["stale-elsewhere", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "other-host", 1])
    alive = await runs.start_run(kb, "s", "u")  # this process: alive, fresh heartbeat
    reaped = await runs.reap_dead_runs(kb, stale_after=600)
    assert sorted(reaped) == ["dead-here", "stale-elsewhere"]
    dead = await runs.get_run(kb, "dead-here")
    assert dead is not None and dead["status"] == "failed" and f"process {dead_pid} is gone" in dead["reason"]
    stale = await runs.get_run(kb, "stale-elsewhere")
    assert stale is not None and stale["status"] == "failed"
    assert "no heartbeat since 2026-01-01T00:00:00Z" in stale["reason"]
    assert (await runs.get_run(kb, alive) or {})["status"] == "running"
    assert await runs.reap_dead_runs(kb, stale_after=600) == []  # nothing left to reap
    await runs.finish_run(kb, alive, "done", "finished", {"pages_ok": 3}, {"helppuff/x": 1})
    row = await runs.get_run(kb, alive)
    assert row is not None
    assert row["status"] == "done" and row["pages_ok"] == 3 and row["finished_at"]
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_dead_and_stale_runs_are_marked_failed(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_scenario(tmp_path))


async def _bad_outcome(tmp_path: Path) -> None:
    kb = local_kb(tmp_path)
    try:
        with pytest.raises(ValueError, match="done or failed"):
            await runs.finish_run(kb, "r", "running", "", {}, {})
    finally:
        await kb.close()


@pytest_twisted.inlineCallbacks
def test_only_done_or_failed_finishes_a_run(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_bad_outcome(tmp_path))
