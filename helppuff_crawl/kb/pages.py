"""One row per page of a site in D1 `pages`: its category, tick, status and reason, and the Markdown
and content hash of its last good crawl."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.items import Page
from helppuff_crawl.kb.database import KnowledgeBase, Statement

PAGE_COLUMNS = (
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
KNOWN_COLUMNS = tuple(c for c in PAGE_COLUMNS if c != "markdown")  # what a crawl reads of a page's last row


class _Keep:
    """A row value meaning: keep what the stored row has (the default for a new row)."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP = _Keep()


def page_row_statement(row: Mapping[str, Any]) -> Statement:
    """The statement that inserts or replaces one page row (all columns); a column given as KEEP
    keeps the stored row's value (a new row takes the column's default)."""
    values = {**_PAGE_DEFAULTS, **row}
    values["updated_at"] = iso(utc_now())
    values["redirects"] = json.dumps(list(values.get("redirects") or []))
    kept = {c for c in PAGE_COLUMNS if values.get(c) is KEEP}
    placeholders = ", ".join("?" for _ in PAGE_COLUMNS)
    updates = ", ".join(f"{c} = excluded.{c}" for c in PAGE_COLUMNS if c not in ("site", "url") and c not in kept)
    sql = (f"INSERT INTO pages ({', '.join(PAGE_COLUMNS)}) VALUES ({placeholders}) "
           f"ON CONFLICT (site, url) DO UPDATE SET {updates}")
    return sql, [_PAGE_DEFAULTS[c] if c in kept else values.get(c) for c in PAGE_COLUMNS]


async def get_page(kb: KnowledgeBase, site: str, url: str) -> dict[str, Any] | None:
    return await kb.first("SELECT * FROM pages WHERE site = ? AND url = ?", [site, url])


def known_pages_statement(site: str) -> Statement:
    """Every page row of the site without its Markdown (what a crawl needs of the last one)."""
    return f"SELECT {', '.join(KNOWN_COLUMNS)} FROM pages WHERE site = ?", [site]


async def list_pages(kb: KnowledgeBase, site: str) -> list[dict[str, Any]]:
    return await kb.query("SELECT * FROM pages WHERE site = ? ORDER BY url", [site])


async def save_page(kb: KnowledgeBase, row: Mapping[str, Any]) -> None:
    """Insert or replace one page row (all columns), in one statement."""
    await kb.query(*page_row_statement(row))


async def redo_all_pages(kb: KnowledgeBase, site: str) -> None:
    """Forget every page's content hash, so the next crawl learns each page again."""
    await kb.query("UPDATE pages SET content_hash = '' WHERE site = ?", [site])


async def status_counts(kb: KnowledgeBase, site: str | None = None) -> list[dict[str, Any]]:
    """Pages per site and status: [{site, status, pages}]."""
    where, params = ("WHERE site = ?", [site]) if site else ("", [])
    return await kb.query(
        f"SELECT site, status, COUNT(*) AS pages FROM pages {where} GROUP BY site, status ORDER BY site, status",
        params,
    )


async def sites(kb: KnowledgeBase) -> list[str]:
    """Every site with a page or a run."""
    rows = await kb.query("SELECT site FROM pages UNION SELECT site FROM crawl_runs ORDER BY site")
    return [row["site"] for row in rows]


LEARNED = ("ok", "unchanged")  # statuses whose Markdown and content hash are this crawl's
RETRIED = ("failed",)  # statuses worth a later retry (and "blocked" by HTTP 429)


def crawled_page_row(page: Page, previous: Mapping[str, Any] | None, status: str, run_id: str,
                     retry_delays: Sequence[int], now: datetime) -> dict[str, Any]:
    """The row a crawl records for `page` with `status`, given the page's row from the last crawl.

    A failed page (or one blocked by HTTP 429) counts its tries and gets a next retry time from
    `retry_delays` (seconds: +15 min, then +2 h) while tries are left. The Markdown and content hash
    are kept from the last good crawl when the page is not learned this time (KEEP: the stored row's,
    so `previous` need not carry the Markdown). A learned page's reason is its note, when it has one
    (its canonical link not followed, and why: pipelines/hash.py), else "".
    """
    retry_count = 0
    next_retry = None
    if status in RETRIED or (status == "blocked" and page.http_status == 429):
        retry_count = int(previous["retry_count"]) + 1 if previous and previous["status"] == status else 1
        if retry_count <= len(retry_delays):
            next_retry = iso(now + timedelta(seconds=retry_delays[retry_count - 1]))
    learned = status in LEARNED
    before = previous or {}
    return {
        "site": page.site, "url": page.url, "category": page.category, "ticked": 1 if page.ticked else 0,
        "tick_reason": page.tick_reason, "source": page.source, "status": status,
        "reason": page.reason, "http_status": page.http_status,
        "final_url": page.final_url, "redirects": page.redirects, "rendered": 1 if page.rendered else 0,
        "title": page.title or before.get("title", ""), "description": page.description,
        "markdown": page.markdown if learned else KEEP,
        "content_hash": page.content_hash if learned else before.get("content_hash", ""),
        "fetched_at": page.fetched_at or None, "retry_count": retry_count, "next_retry_at": next_retry,
        "run_id": run_id,
    }
