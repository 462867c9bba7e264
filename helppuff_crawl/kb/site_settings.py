"""A site's helppuff.json in D1 `site_settings`, which the Worker reads on every request.

The owner's dashboard (worker/src/admin/settings.ts) saves some of its fields too. A file stored
after that (`helppuff settings set`, `config apply`) replaces the whole document, so
`replace_site_settings` says which live fields saved since the file was last changed it replaces,
with their values, and the commands print them: the dashboard's change is never undone unsaid.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from helppuff_crawl.clock import iso, parse_iso, utc_now
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


def changed_fields(before: Any, after: Any, prefix: str = "") -> list[str]:
    """The dotted paths where two configurations differ (a whole list counts as one field)."""
    if isinstance(before, dict) and isinstance(after, dict):
        fields: list[str] = []
        for key in sorted(set(before) | set(after)):
            fields += changed_fields(before.get(key), after.get(key), f"{prefix}{key}.")
        return fields
    return [] if before == after else [prefix.rstrip(".")]


def _value_at(doc: Any, field: str) -> Any:
    for name in field.split("."):
        doc = doc.get(name) if isinstance(doc, dict) else None
    return doc


def replaced_since(row: dict[str, Any] | None, text: str, edited_at: datetime | None) -> list[tuple[str, Any]]:
    """The fields of the stored `row` ({settings, updated_at}, or None) that storing `text` replaces,
    each with its live value, when the row was saved after `edited_at` (when the file stored was last
    changed; None: not known, as for stdin); [] otherwise."""
    if row is None or (edited_at is not None and parse_iso(row["updated_at"]) <= edited_at):
        return []
    try:
        live = json.loads(row["settings"] or "{}")
    except ValueError:
        return []  # unreadable: the Worker read it as its defaults
    return [(field, _value_at(live, field)) for field in changed_fields(live, json.loads(text))]


async def replace_site_settings(kb: KnowledgeBase, site: str, text: str,
                                edited_at: datetime | None) -> list[tuple[str, Any]]:
    """Store `text` as the site's settings; the live fields saved after `edited_at` it replaced (replaced_since)."""
    replaced = replaced_since(await get_site_settings(kb, site), text, edited_at)
    await set_site_settings(kb, site, text)
    return replaced


def replaced_warning(site: str, source: str | None, replaced: list[tuple[str, Any]]) -> str:
    """One line for the operator naming each live field replaced, with the value it had ("" when none);
    `source`: the file stored, None for stdin (when it was written is not known)."""
    if not replaced:
        return ""
    shown = "; ".join(f"{field} was {json.dumps(value, ensure_ascii=False)}" for field, value in replaced)
    saved = (f"settings saved after {source} was last changed (in the dashboard's Settings, or from another file)"
             if source is not None else "live settings that differ (perhaps saved in the dashboard's Settings)")
    return f"warning: {site}: {saved} are replaced: {shown}. `helppuff config pull --site {site}` before editing keeps them."


async def all_site_settings(kb: KnowledgeBase) -> list[tuple[str, str | None]]:
    """Every site's stored settings, (site, settings text), by site."""
    rows = await kb.query(ALL_SITE_SETTINGS)
    return [(row["site"], row["settings"]) for row in rows]
