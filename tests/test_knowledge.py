"""Runs in the knowledge base: a run left "running" by a dead process is marked failed."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest_twisted

from helppuff_crawl.knowledge import BackendConfig, KnowledgeBase, iso, utc_now
from tests.conftest import run_async


def _kb(tmp_path: Path) -> KnowledgeBase:
    return KnowledgeBase.open(BackendConfig.from_settings({"HELPPUFF_DATA_DIR": str(tmp_path), "HELPPUFF_D1_DATABASE": "kb"}))


async def _scenario(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    # A real process that has exited: its pid is gone.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(gone.stdout)
    now = iso(utc_now())
    insert = ("INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at, host, pid) "
              "VALUES (?, 's', 'u', 'running', ?, ?, ?, ?)")
    await kb.client.d1_query(kb.database, insert, ["dead-here", now, now, socket.gethostname(), dead_pid])
    await kb.client.d1_query(kb.database, insert, ["stale-elsewhere", "2026-01-01T00:00:00Z",
                                                   "2026-01-01T00:00:00Z", "other-host", 1])
    alive = await kb.start_run("s", "u")  # this process: alive, fresh heartbeat
    reaped = await kb.reap_dead_runs(stale_after=600)
    assert sorted(reaped) == ["dead-here", "stale-elsewhere"]
    dead = await kb.run("dead-here")
    assert dead["status"] == "failed" and f"process {dead_pid} is gone" in dead["reason"]
    stale = await kb.run("stale-elsewhere")
    assert stale["status"] == "failed" and "no heartbeat since 2026-01-01T00:00:00Z" in stale["reason"]
    assert (await kb.run(alive))["status"] == "running"
    assert await kb.reap_dead_runs(stale_after=600) == []  # nothing left to reap
    await kb.finish_run(alive, "done", "finished", {"pages_ok": 3}, {"helppuff/x": 1})
    row = await kb.run(alive)
    assert row["status"] == "done" and row["pages_ok"] == 3 and row["finished_at"]
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_dead_and_stale_runs_are_marked_failed(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_scenario(tmp_path))


def test_credentials_go_together() -> None:
    import pytest

    with pytest.raises(ValueError, match="go together"):
        BackendConfig.from_settings({"HELPPUFF_CLOUDFLARE_API_TOKEN": "t", "HELPPUFF_D1_DATABASE": "kb"})
