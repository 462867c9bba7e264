"""The knowledge base as the crawler sees it: crawl runs and pages in D1.

Every read and write goes through `CloudflareClient`, to Cloudflare's D1 or to the embedded
local cloud (`open_knowledge_base` picks by the credentials). One write path for both.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Self

from helppuff_crawl.cloudflare.client import CloudflareClient, HttpTransport

logger = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_iso(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def new_run_id(now: datetime | None = None) -> str:
    return f"{(now or utc_now()).strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


@dataclass(frozen=True)
class BackendConfig:
    data_dir: Path
    database: str
    api_token: str
    account_id: str
    api_base: str

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> BackendConfig:
        token = settings.get("HELPPUFF_CLOUDFLARE_API_TOKEN") or ""
        account = settings.get("HELPPUFF_CLOUDFLARE_ACCOUNT_ID") or ""
        if bool(token) != bool(account):
            raise ValueError(
                "CLOUDFLARE_API_TOKEN and CLOUDFLARE_ACCOUNT_ID go together: set both, or neither for the local cloud"
            )
        database = str(settings.get("HELPPUFF_D1_DATABASE") or "")
        if not database:
            raise ValueError("HELPPUFF_D1_DATABASE must name the D1 database")
        return cls(
            data_dir=Path(settings.get("HELPPUFF_DATA_DIR") or ".helppuff"),
            database=database,
            api_token=token,
            account_id=account,
            api_base=settings.get("HELPPUFF_CLOUDFLARE_API_BASE") or "https://api.cloudflare.com/client/v4",
        )

    @property
    def remote(self) -> bool:
        return bool(self.api_token)


def open_client(config: BackendConfig) -> CloudflareClient:
    """The client for Cloudflare when credentials are set, else for the local cloud in-process."""
    if config.remote:
        return CloudflareClient(HttpTransport(config.api_token, config.api_base), config.account_id)
    from helppuff_crawl.local.cloud import LOCAL_ACCOUNT_ID, LocalCloud, LocalTransport

    return CloudflareClient(LocalTransport(LocalCloud(config.data_dir)), LOCAL_ACCOUNT_ID)


_PAGE_COLUMNS = (
    "site", "url", "category", "ticked", "tick_reason", "source", "status", "reason", "http_status",
    "final_url", "redirects", "rendered", "title", "description", "markdown", "content_hash",
    "fetched_at", "retry_count", "next_retry_at", "run_id", "updated_at",
)
# Column defaults (as in the schema) for a row that does not give every column.
_PAGE_DEFAULTS: dict[str, Any] = {
    "category": "other", "ticked": 1, "tick_reason": "", "source": "", "status": "pending", "reason": "",
    "http_status": None, "final_url": "", "redirects": [], "rendered": 0, "title": "", "description": "",
    "markdown": "", "content_hash": "", "fetched_at": None, "retry_count": 0, "next_retry_at": None, "run_id": "",
}
# Days a usage addition's key is kept: longer than any retry of its request can take.
USAGE_KEY_DAYS = 2

_ADD_USAGE = (
    "INSERT INTO usage_daily (day, site, kind, model, calls, input_tokens, output_tokens, neurons) "
    "SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM usage_writes WHERE id = ?) "
    "ON CONFLICT (day, site, kind, model) DO UPDATE SET "
    "calls = calls + excluded.calls, input_tokens = input_tokens + excluded.input_tokens, "
    "output_tokens = output_tokens + excluded.output_tokens, neurons = neurons + excluded.neurons"
)

_RUN_STATS = ("pages_found", "pages_ticked", "pages_ok", "pages_failed")


class KnowledgeBase:
    """Crawl runs and pages of one D1 database."""

    def __init__(self, client: CloudflareClient, database: str) -> None:
        self.client = client
        self.database = database

    @classmethod
    def open(cls, config: BackendConfig) -> KnowledgeBase:
        return cls(open_client(config), config.database)

    @classmethod
    def from_settings(cls, settings: Any) -> KnowledgeBase:
        """The knowledge base the project settings name; `async with` closes it."""
        return cls.open(BackendConfig.from_settings(settings))

    async def close(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # --- runs ---------------------------------------------------------------------------

    async def reap_dead_runs(self, stale_after: float, now: datetime | None = None) -> list[str]:
        """Mark failed the runs left "running" by a process that is gone; returns their ids.

        A run is dead when it ran on this host and its pid no longer exists, or when its
        heartbeat is older than `stale_after` seconds (another host, or a reused pid).
        """
        now = now or utc_now()
        rows = await self.client.d1_query(
            self.database, "SELECT id, host, pid, heartbeat_at FROM crawl_runs WHERE status = 'running'"
        )
        dead: list[tuple[str, str]] = []
        for row in rows:
            if row["host"] == socket.gethostname() and row["pid"] and not _pid_alive(int(row["pid"])):
                dead.append((row["id"], f"process {row['pid']} is gone"))
            elif parse_iso(row["heartbeat_at"]) < now - timedelta(seconds=stale_after):
                dead.append((row["id"], f"no heartbeat since {row['heartbeat_at']}"))
        for run_id, why in dead:
            await self.client.d1_query(
                self.database,
                "UPDATE crawl_runs SET status = 'failed', reason = ?, finished_at = ? "
                "WHERE id = ? AND status = 'running'",
                [f"abandoned: {why}", iso(now), run_id],
            )
            logger.warning("Crawl run %s was left running (%s): marked failed", run_id, why)
        return [run_id for run_id, _ in dead]

    async def start_run(self, site: str, start_url: str) -> str:
        now = utc_now()
        run_id = new_run_id(now)
        await self.client.d1_query(
            self.database,
            # ON CONFLICT: a retried request that had reached D1 must not fail the start.
            "INSERT INTO crawl_runs (id, site, start_url, status, started_at, heartbeat_at, host, pid) "
            "VALUES (?, ?, ?, 'running', ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
            [run_id, site, start_url, iso(now), iso(now), socket.gethostname(), os.getpid()],
        )
        return run_id

    async def heartbeat(self, run_id: str, counts: Mapping[str, int] | None = None) -> None:
        sets = ["heartbeat_at = ?"]
        params: list[Any] = [iso(utc_now())]
        for key in _RUN_STATS:
            if counts and key in counts:
                sets.append(f"{key} = ?")
                params.append(int(counts[key]))
        await self.client.d1_query(
            self.database, f"UPDATE crawl_runs SET {', '.join(sets)} WHERE id = ?", [*params, run_id]
        )

    async def finish_run(
        self, run_id: str, status: str, reason: str, counts: Mapping[str, int], stats: Mapping[str, Any]
    ) -> None:
        if status not in ("done", "failed"):
            raise ValueError(f"run status must be done or failed, got {status!r}")
        now = iso(utc_now())
        await self.client.d1_query(
            self.database,
            "UPDATE crawl_runs SET status = ?, reason = ?, finished_at = ?, heartbeat_at = ?, "
            "pages_found = ?, pages_ticked = ?, pages_ok = ?, pages_failed = ?, stats = ? WHERE id = ?",
            [
                status, reason, now, now,
                *(int(counts.get(key, 0)) for key in _RUN_STATS),
                json.dumps(stats, sort_keys=True, default=str),
                run_id,
            ],
        )

    async def run(self, run_id: str) -> dict[str, Any] | None:
        rows = await self.client.d1_query(self.database, "SELECT * FROM crawl_runs WHERE id = ?", [run_id])
        return rows[0] if rows else None

    async def last_run(self, site: str) -> dict[str, Any] | None:
        rows = await self.client.d1_query(
            self.database, "SELECT * FROM crawl_runs WHERE site = ? ORDER BY started_at DESC, id DESC LIMIT 1", [site]
        )
        return rows[0] if rows else None

    # --- pages --------------------------------------------------------------------------

    async def page(self, site: str, url: str) -> dict[str, Any] | None:
        rows = await self.client.d1_query(self.database, "SELECT * FROM pages WHERE site = ? AND url = ?", [site, url])
        return rows[0] if rows else None

    async def pages(self, site: str) -> list[dict[str, Any]]:
        return await self.client.d1_query(self.database, "SELECT * FROM pages WHERE site = ? ORDER BY url", [site])

    async def save_page(self, row: Mapping[str, Any]) -> None:
        """Insert or replace one page row (all columns), in one statement."""
        await self.client.d1_query(self.database, *page_row_statement(row))

    # --- facts --------------------------------------------------------------------------

    async def save_crawl_facts(self, site: str, values: Mapping[str, Any], source_url: str = "") -> None:
        """Write the crawl's facts; a key the owner set is never overwritten."""
        now = iso(utc_now())
        statements = [
            ("INSERT INTO facts (site, key, value, source, source_url, updated_at) VALUES (?, ?, ?, 'crawl', ?, ?) "
             "ON CONFLICT (site, key) DO UPDATE SET value = excluded.value, source_url = excluded.source_url, "
             "updated_at = excluded.updated_at WHERE facts.source = 'crawl'",
             [site, key, json.dumps(value, ensure_ascii=False), source_url, now])
            for key, value in values.items()
        ]
        if statements:
            await self.client.d1_batch(self.database, statements)

    async def set_owner_fact(self, site: str, key: str, value: Any) -> None:
        await self.client.d1_query(
            self.database,
            "INSERT INTO facts (site, key, value, source, source_url, updated_at) VALUES (?, ?, ?, 'owner', '', ?) "
            "ON CONFLICT (site, key) DO UPDATE SET value = excluded.value, source = 'owner', "
            "source_url = '', updated_at = excluded.updated_at",
            [site, key, json.dumps(value, ensure_ascii=False), iso(utc_now())],
        )

    async def facts(self, site: str) -> list[dict[str, Any]]:
        return await self.client.d1_query(
            self.database, "SELECT key, value, source, source_url, updated_at FROM facts WHERE site = ? ORDER BY key",
            [site],
        )

    async def add_usage(self, key: str, site: str, kind: str, model: str, calls: int, input_tokens: int,
                        output_tokens: int, neurons: float) -> bool:
        """Add to today's usage row (UTC day), once per `key`; False when the key was already added.

        The addition and its key are one batch (one transaction), so a retried request whose first
        answer was lost adds nothing the second time. Keys older than USAGE_KEY_DAYS are pruned.
        """
        now = utc_now()
        day = now.strftime("%Y-%m-%d")
        oldest = (now - timedelta(days=USAGE_KEY_DAYS)).strftime("%Y-%m-%d")
        results = await self.client.d1_batch(self.database, [
            (_ADD_USAGE, [day, site, kind, model, calls, input_tokens, output_tokens, neurons, key]),
            ("INSERT INTO usage_writes (id, day) VALUES (?, ?) ON CONFLICT (id) DO NOTHING RETURNING id",
             [key, day]),
            ("DELETE FROM usage_writes WHERE day < ?", [oldest]),
        ])
        return bool(results[1])

    # --- the answering side: site settings and leads -----------------------------------

    async def site_settings(self, site: str) -> dict[str, Any] | None:
        """The site's stored settings row ({settings (text), updated_at}), or None."""
        rows = await self.client.d1_query(
            self.database, "SELECT settings, updated_at FROM site_settings WHERE site = ?", [site]
        )
        return rows[0] if rows else None

    async def set_site_settings(self, site: str, text: str) -> None:
        """Store the site's settings (the helppuff.json text the Worker reads on each request)."""
        await self.client.d1_query(
            self.database,
            "INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (site) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at",
            [site, text, iso(utc_now())],
        )

    async def leads(self, site: str, include_handled: bool = False) -> list[dict[str, Any]]:
        """The site's callback leads, newest first; open ones only unless `include_handled`."""
        where = "" if include_handled else " AND handled_at IS NULL"
        return await self.client.d1_query(
            self.database,
            "SELECT id, name, phone, email, need, excerpt, visitor_id, source, created_at, handled_at, "
            f"notified_at, notify_error FROM leads WHERE site = ?{where} ORDER BY created_at DESC, id",
            [site],
        )

    async def mark_leads_handled(self, site: str, ids: Sequence[str]) -> list[str]:
        """Mark leads handled by id or unique id prefix; returns the full ids marked.

        Raises ValueError naming the first id that matches no lead of the site, or several.
        """
        found: list[str] = []
        for given in ids:
            prefix = given.strip().lower()
            rows = await self.client.d1_query(
                self.database, "SELECT id FROM leads WHERE site = ? AND substr(id, 1, ?) = ?",
                [site, len(prefix), prefix],
            ) if prefix else []
            if not rows:
                raise ValueError(f"lead {given!r}: no lead of {site} has that id")
            if len(rows) > 1:
                raise ValueError(f"lead {given!r}: {len(rows)} leads of {site} start with that; give more of the id")
            found.append(rows[0]["id"])
        now = iso(utc_now())
        await self.client.d1_batch(self.database, [
            ("UPDATE leads SET handled_at = ? WHERE site = ? AND id = ? AND handled_at IS NULL", [now, site, lead])
            for lead in found
        ])
        return found

    async def status_counts(self, site: str | None = None) -> list[dict[str, Any]]:
        where, params = ("WHERE site = ?", [site]) if site else ("", [])
        return await self.client.d1_query(
            self.database,
            f"SELECT site, status, COUNT(*) AS pages FROM pages {where} GROUP BY site, status ORDER BY site, status",
            params,
        )

    async def sites(self) -> list[str]:
        rows = await self.client.d1_query(
            self.database, "SELECT site FROM pages UNION SELECT site FROM crawl_runs ORDER BY site"
        )
        return [row["site"] for row in rows]


def page_row_statement(row: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """The statement that inserts or replaces one page row (all columns)."""
    values = {**_PAGE_DEFAULTS, **row}
    values["updated_at"] = iso(utc_now())
    values["redirects"] = json.dumps(list(values.get("redirects") or []))
    placeholders = ", ".join("?" for _ in _PAGE_COLUMNS)
    updates = ", ".join(f"{c} = excluded.{c}" for c in _PAGE_COLUMNS if c not in ("site", "url"))
    sql = (f"INSERT INTO pages ({', '.join(_PAGE_COLUMNS)}) VALUES ({placeholders}) "
           f"ON CONFLICT (site, url) DO UPDATE SET {updates}")
    return sql, [values.get(c) for c in _PAGE_COLUMNS]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
