"""Runs in the knowledge base: a run left "running" by a dead process is marked failed."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
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


class _AnswerLostOnce:
    """A LocalTransport whose first usage write is carried out but its answer lost (a read timeout)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.lost = 0

    async def request(self, method: str, path: str, *, content: bytes = b"", headers: Any = None) -> Any:
        reply = await self.inner.request(method, path, content=content, headers=headers)
        if b"usage_writes" in content and not self.lost:
            self.lost += 1
            raise httpx.ReadTimeout("the answer was lost")
        return reply

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _usage_scenario(tmp_path: Path) -> None:
    kb = _kb(tmp_path)
    flaky = _AnswerLostOnce(kb.client.transport)
    kb.client.transport = flaky
    kb.client.backoff = 0.0
    assert await kb.add_usage("run-1:embed", "s", "embed", "@cf/baai/bge-m3", 2, 500, 0, 6.0) is False
    assert flaky.lost == 1  # the first attempt committed, its answer was lost, the retry added nothing
    assert await kb.add_usage("run-1:embed", "s", "embed", "@cf/baai/bge-m3", 2, 500, 0, 6.0) is False
    assert await kb.add_usage("run-2:embed", "s", "embed", "@cf/baai/bge-m3", 1, 100, 0, 1.5) is True
    rows = await kb.client.d1_query(kb.database, "SELECT calls, input_tokens, neurons FROM usage_daily WHERE site = 's'")
    assert rows == [{"calls": 3, "input_tokens": 600, "neurons": 7.5}]
    # Keys older than USAGE_KEY_DAYS are pruned by the next addition.
    await kb.client.d1_query(kb.database, "UPDATE usage_writes SET day = '2020-01-01' WHERE id = 'run-1:embed'")
    assert await kb.add_usage("run-3:embed", "s", "embed", "@cf/baai/bge-m3", 1, 100, 0, 1.5) is True
    keys = await kb.client.d1_query(kb.database, "SELECT id FROM usage_writes ORDER BY id")
    assert [row["id"] for row in keys] == ["run-2:embed", "run-3:embed"]
    await kb.close()


@pytest_twisted.inlineCallbacks
def test_a_retried_usage_write_adds_once(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield run_async(_usage_scenario(tmp_path))
