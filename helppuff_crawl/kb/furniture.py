"""The furniture a full crawl learned, in D1 `site_furniture` (one row per site), for targeted crawls.

A full crawl learns the site's furniture from a sample of its first pages (pipelines/boilerplate.py);
a targeted crawl fetches a few named pages, which are no sample, so it drops the furniture the last
full crawl stored. The row holds what `text/boilerplate.Furniture` holds: the fingerprints to drop
(a JSON list, sorted) and the Markdown of dropped blocks with contact details (a JSON list, in order),
with the number of sample pages it was learned from and the run that learned it.

A weak sample (fewer than `STRONG_SAMPLE` pages: a crawl whose sample pages mostly failed) does not
replace furniture learned from a strong one; a site that has only that few pages stores it all the same.
D1's limits apply: each value and the row must fit in D1_MAX_ROW_BYTES (else ValueError, nothing stored).
"""

from __future__ import annotations

import json
import logging
from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.cloudflare.client import D1_MAX_ROW_BYTES
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.text.boilerplate import Furniture

logger = logging.getLogger(__name__)

STRONG_SAMPLE = 3  # text/boilerplate learns nothing from fewer pages
_ROW_ROOM = 1_000  # bytes of the row left for the site, the run id, the time and SQLite's framing


def furniture_json(furniture: Furniture) -> tuple[str, str]:
    """The two JSON values stored: the fingerprints sorted (a set has no order), the contact blocks in order."""
    return (json.dumps(sorted(furniture.drop)), json.dumps(list(furniture.contact_blocks), ensure_ascii=False))


async def save_furniture(kb: KnowledgeBase, site: str, furniture: Furniture, sample_pages: int, run_id: str) -> bool:
    """Store the furniture a full crawl learned; False when a weak sample left the stored one in place."""
    drop, contact = furniture_json(furniture)
    size = len(drop.encode()) + len(contact.encode())
    if size > D1_MAX_ROW_BYTES - _ROW_ROOM:
        raise ValueError(f"the furniture of {site} takes {size} bytes, over D1's row limit ({D1_MAX_ROW_BYTES})")
    await kb.query(
        "INSERT INTO site_furniture (site, drop_blocks, contact_blocks, sample_pages, run_id, learned_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (site) DO UPDATE SET drop_blocks = excluded.drop_blocks, "
        "contact_blocks = excluded.contact_blocks, sample_pages = excluded.sample_pages, run_id = excluded.run_id, "
        "learned_at = excluded.learned_at WHERE excluded.sample_pages >= ? OR site_furniture.sample_pages < ?",
        [site, drop, contact, sample_pages, run_id, iso(utc_now()), STRONG_SAMPLE, STRONG_SAMPLE],
    )
    stored = await stored_furniture_row(kb, site)
    return stored is not None and stored["run_id"] == run_id


async def stored_furniture_row(kb: KnowledgeBase, site: str) -> dict[str, Any] | None:
    """The site's row as stored ({drop_blocks, contact_blocks (JSON text), sample_pages, run_id, learned_at})."""
    return await kb.first("SELECT drop_blocks, contact_blocks, sample_pages, run_id, learned_at "
                          "FROM site_furniture WHERE site = ?", [site])


async def load_furniture(kb: KnowledgeBase, site: str) -> tuple[Furniture, dict[str, Any]] | None:
    """The furniture stored for `site` and its row (sample_pages, run_id, learned_at), or None."""
    row = await stored_furniture_row(kb, site)
    if row is None:
        return None
    furniture = Furniture(frozenset(json.loads(row["drop_blocks"])), tuple(json.loads(row["contact_blocks"])))
    return furniture, row
