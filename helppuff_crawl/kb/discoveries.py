"""A site's discovered pages, for the owner's "Set up" (D1 `site_discoveries`, migrations/0014): what a
discover job found (`helppuff discover`'s pages: url, category, ticked, reason, source, status), before anything
is learned. The dashboard (worker/src/admin/setup.ts) writes the row "queued" with the start URL when
the owner asks, and shows the pages once a `helppuff worker` has run the job and written them here
(`record`); a site added from the dashboard is known by this row until its first crawl (`start_url`).
"""

from __future__ import annotations

import json
from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.kb.database import KnowledgeBase

MAX_REASON = 300
PAGE_FIELDS = ("url", "category", "ticked", "reason", "source", "status")


async def start_url(kb: KnowledgeBase, site: str) -> str | None:
    """The start URL the owner gave for `site` when adding it from the dashboard, or None."""
    row = await kb.first("SELECT start_url FROM site_discoveries WHERE site = ?", [site])
    return str(row["start_url"]) if row else None


async def record(kb: KnowledgeBase, site: str, start: str, pages: list[dict[str, Any]], failure: str = "") -> None:
    """Write what the discover job found (or, with `failure`, why it found nothing) as the site's discovery."""
    kept = [{field: page.get(field) for field in PAGE_FIELDS} for page in pages]
    for page in kept:
        page["ticked"] = bool(page["ticked"])
    now = iso(utc_now())
    await kb.query(
        "INSERT INTO site_discoveries (site, start_url, state, reason, pages, asked_at, finished_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (site) DO UPDATE SET state = excluded.state, "
        "reason = excluded.reason, pages = excluded.pages, finished_at = excluded.finished_at",
        [site, start, "failed" if failure else "done", failure[:MAX_REASON], json.dumps(kept, ensure_ascii=False),
         now, now])
