"""What `helppuff knowledge status` reports per site: pages by status, chunks, live vectors, the
site's model, its last run, today's Workers AI use, a consistency check of D1 against Vectorize, and
what waits for the owner (or the owner added), and the last crawl's self-check (kb/selfcheck.py)."""

from __future__ import annotations

from typing import Any

from helppuff_crawl.clock import utc_day, utc_now
from helppuff_crawl.kb import pages, runs, selfcheck, usage
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.writer import KnowledgeWriter

_RUN_KEYS = ("id", "status", "reason", "started_at", "finished_at", "pages_ok", "pages_failed")

# What waits for the owner, and what the owner added: one row per site.
_OWNER_COUNTS = (
    "SELECT (SELECT COUNT(*) FROM own_answers WHERE site = ?1) AS own_answers, "
    "(SELECT COUNT(*) FROM knowledge_files WHERE site = ?1 AND status = 'ok') AS files, "
    "(SELECT COUNT(*) FROM knowledge_files WHERE site = ?1 AND status = 'failed') AS files_failed, "
    "(SELECT COUNT(*) FROM knowledge_gaps WHERE site = ?1 AND state = 'open') AS open_gaps, "
    "(SELECT COUNT(*) FROM leads WHERE site = ?1 AND handled_at IS NULL) AS open_leads, "
    "(SELECT COUNT(*) FROM crawl_requests WHERE site = ?1 AND handled_at IS NULL) AS recrawl_requested"
)


async def site_report(kb: KnowledgeBase, writer: KnowledgeWriter, site: str, day: str) -> dict[str, Any]:
    """One site's entry of the report (`day`: the UTC day whose usage is shown)."""
    counts = {row["status"]: row["pages"] for row in await pages.status_counts(kb, site)}
    chunks = (await kb.query("SELECT COUNT(*) AS n FROM chunks WHERE site = ?", [site]))[0]["n"]
    vectors = (await kb.query("SELECT COUNT(*) AS n FROM vectors WHERE site = ? AND state = 'live'", [site]))[0]["n"]
    index = await kb.first("SELECT model, dimensions, vector_index, namespace, chunk_min_tokens, chunk_max_tokens "
                           "FROM site_index WHERE site = ?", [site])
    used = await usage.usage_on(kb, site, day)
    last = await runs.last_run(kb, site)
    check = await writer.consistency(site) if index else {"consistent": chunks == 0, "chunks": chunks}
    return {
        "site": site, "pages": counts, "chunks": chunks, "vectors": vectors, "model": index,
        "last_run": {key: last[key] for key in _RUN_KEYS} if last else None,
        "usage_today": {"day": day, "rows": used, "neurons": round(sum(u["neurons"] for u in used), 4)},
        "consistency": check,
        "owner": (await kb.query(_OWNER_COUNTS, [site]))[0],
        "self_check": await selfcheck.last_check(kb, site),
    }


async def knowledge_report(kb: KnowledgeBase, writer: KnowledgeWriter, site: str | None) -> dict[str, Any]:
    """The report for one site, or for every site in the knowledge base."""
    day = utc_day(utc_now())
    names = [site] if site else await pages.sites(kb)
    return {"sites": [await site_report(kb, writer, name, day) for name in names]}


async def indexed_sites(kb: KnowledgeBase) -> list[dict[str, Any]]:
    """Each site with chunks, with its chunk count and embedding model: [{site, chunks, model}]."""
    return await kb.query(
        "SELECT chunks.site AS site, COUNT(*) AS chunks, "
        "(SELECT model FROM site_index WHERE site_index.site = chunks.site) AS model "
        "FROM chunks GROUP BY chunks.site ORDER BY chunks.site")
