"""A site's helppuff.json in D1 `site_settings`, which the Worker reads on every request."""

from __future__ import annotations

from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.kb.database import KnowledgeBase

# Every site's settings, by site: read here, and by `helppuff serve` straight from the local cloud.
ALL_SITE_SETTINGS = "SELECT site, settings FROM site_settings ORDER BY site"


async def get_site_settings(kb: KnowledgeBase, site: str) -> dict[str, Any] | None:
    """The site's stored settings row ({settings (text), updated_at}), or None."""
    return await kb.first("SELECT settings, updated_at FROM site_settings WHERE site = ?", [site])


async def set_site_settings(kb: KnowledgeBase, site: str, text: str) -> None:
    """Store the site's settings (the helppuff.json text the Worker reads on each request)."""
    await kb.query(
        "INSERT INTO site_settings (site, settings, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT (site) DO UPDATE SET settings = excluded.settings, updated_at = excluded.updated_at",
        [site, text, iso(utc_now())],
    )


async def all_site_settings(kb: KnowledgeBase) -> list[tuple[str, str | None]]:
    """Every site's stored settings, (site, settings text), by site."""
    rows = await kb.query(ALL_SITE_SETTINGS)
    return [(row["site"], row["settings"]) for row in rows]
