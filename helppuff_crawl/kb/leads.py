"""Callback requests in D1 `leads`: the Worker saves them (worker/src/chat/leads.ts); the owner lists
them and marks them handled (`helppuff leads`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.kb.database import KnowledgeBase


async def list_leads(kb: KnowledgeBase, site: str, include_handled: bool = False) -> list[dict[str, Any]]:
    """The site's callback leads, newest first; open ones only unless `include_handled`."""
    where = "" if include_handled else " AND handled_at IS NULL"
    return await kb.query(
        "SELECT id, name, phone, email, need, excerpt, visitor_id, source, created_at, handled_at, "
        f"notified_at, notify_error FROM leads WHERE site = ?{where} ORDER BY created_at DESC, id",
        [site],
    )


async def mark_leads_handled(kb: KnowledgeBase, site: str, ids: Sequence[str]) -> list[str]:
    """Mark leads handled by id or unique id prefix; returns the full ids marked.

    Raises ValueError naming the first id that matches no lead of the site, or several.
    """
    found: list[str] = []
    for given in ids:
        prefix = given.strip().lower()
        rows = await kb.query("SELECT id FROM leads WHERE site = ? AND substr(id, 1, ?) = ?",
                              [site, len(prefix), prefix]) if prefix else []
        if not rows:
            raise ValueError(f"lead {given!r}: no lead of {site} has that id")
        if len(rows) > 1:
            raise ValueError(f"lead {given!r}: {len(rows)} leads of {site} start with that; give more of the id")
        found.append(rows[0]["id"])
    now = iso(utc_now())
    await kb.batch([("UPDATE leads SET handled_at = ? WHERE site = ? AND id = ? AND handled_at IS NULL",
                     [now, site, lead]) for lead in found])
    return found
