"""Crawl runs in D1 `crawl_runs`: started, beaten while they run, finished, and reaped when left behind.

A run is "running" from its start until `finish_run` records it "done" or "failed" with the reason and
the crawl's stats. A run whose process is gone never stays "running": `reap_dead_runs` (at the start of
every crawl, and before a schedule is planned) marks it failed.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from helppuff_crawl.clock import iso, parse_iso, utc_now
from helppuff_crawl.kb.database import KnowledgeBase

logger = logging.getLogger(__name__)

#: The counts a run row keeps, beside its stats.
RUN_COUNTS = ("pages_found", "pages_ticked", "pages_ok", "pages_failed")
RUN_OUTCOMES = ("done", "failed")


def new_run_id(now: datetime | None = None) -> str:
    """"20261201T093000Z-3fa9c1": the start time, then random hex (two runs in one second differ)."""
    return f"{(now or utc_now()).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


async def reap_dead_runs(kb: KnowledgeBase, stale_after: float, now: datetime | None = None) -> list[str]:
    """Mark failed the runs left "running" by a process that is gone; returns their ids.

    A run is dead when it ran on this host and its pid no longer exists, or when its heartbeat is
    older than `stale_after` seconds (another host, or a reused pid).
    """
    now = now or utc_now()
    rows = await kb.query("SELECT id, host, pid, heartbeat_at FROM crawl_runs WHERE status = 'running'")
    dead: list[tuple[str, str]] = []
    for row in rows:
        if row["host"] == socket.gethostname() and row["pid"] and not _pid_alive(int(row["pid"])):
            dead.append((row["id"], f"process {row['pid']} is gone"))
        elif parse_iso(row["heartbeat_at"]) < now - timedelta(seconds=stale_after):
            dead.append((row["id"], f"no heartbeat since {row['heartbeat_at']}"))
    for run_id, why in dead:
        await kb.query(
            "UPDATE crawl_runs SET status = 'failed', reason = ?, finished_at = ? WHERE id = ? AND status = 'running'",
            [f"abandoned: {why}", iso(now), run_id],
        )
        logger.warning("Crawl run %s was left running (%s): marked failed", run_id, why)
    return [run_id for run_id, _ in dead]


async def start_run(kb: KnowledgeBase, site: str, start_url: str) -> str:
    """A new "running" run of `site` by this process; returns its id."""
    now = utc_now()
    run_id = new_run_id(now)
    await kb.query(
        # ON CONFLICT: a retried request that had reached D1 must not fail the start.
        "INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at, host, pid) "
        "VALUES (?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        [run_id, site, start_url, iso(now), iso(now), socket.gethostname(), os.getpid()],
    )
    return run_id


async def heartbeat(kb: KnowledgeBase, run_id: str, counts: Mapping[str, int] | None = None) -> None:
    """The run is alive: its heartbeat time, and its counts so far."""
    sets = ["heartbeat_at = ?"]
    params: list[Any] = [iso(utc_now())]
    for key in RUN_COUNTS:
        if counts and key in counts:
            sets.append(f"{key} = ?")
            params.append(int(counts[key]))
    await kb.query(f"UPDATE crawl_runs SET {', '.join(sets)} WHERE id = ?", [*params, run_id])


async def finish_run(kb: KnowledgeBase, run_id: str, status: str, reason: str, counts: Mapping[str, int],
                     stats: Mapping[str, Any]) -> None:
    """Record the run's outcome ("done" or "failed"), its reason, counts and stats."""
    if status not in RUN_OUTCOMES:
        raise ValueError(f"run status must be done or failed, got {status!r}")
    now = iso(utc_now())
    await kb.query(
        "UPDATE crawl_runs SET status = ?, reason = ?, finished_at = ?, heartbeat_at = ?, "
        "pages_found = ?, pages_ticked = ?, pages_ok = ?, pages_failed = ?, stats = ? WHERE id = ?",
        [status, reason, now, now, *(int(counts.get(key, 0)) for key in RUN_COUNTS),
         json.dumps(stats, sort_keys=True, default=str), run_id],
    )


async def get_run(kb: KnowledgeBase, run_id: str) -> dict[str, Any] | None:
    return await kb.first("SELECT * FROM crawl_runs WHERE id = ?", [run_id])


async def last_run(kb: KnowledgeBase, site: str) -> dict[str, Any] | None:
    """The site's latest run, whatever its outcome."""
    return await kb.first("SELECT * FROM crawl_runs WHERE site = ? ORDER BY started_at DESC, id DESC LIMIT 1", [site])


async def last_done_run(kb: KnowledgeBase, site: str) -> dict[str, Any] | None:
    """The site's latest run that finished "done"."""
    return await kb.first("SELECT * FROM crawl_runs WHERE site = ? AND status = 'done' "
                          "ORDER BY finished_at DESC, id DESC LIMIT 1", [site])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
