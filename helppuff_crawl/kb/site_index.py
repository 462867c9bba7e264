"""A site's place in the vector index, taken before anything is written there, and what a killed crawl
left half-written, mended.

- `ensure_index(writer)`: the Vectorize index (and its category metadata index) is created when it
  is missing; one holding vectors of another dimension is refused (ModelMismatch).
- `claim_site(writer, site)`: the site's model, dimensions, index and chunk sizes are recorded in D1
  `site_index`; True when the model or the sizes changed (every page of the site is then learned
  again); refused (ModelMismatch) when another site in the index uses another model.
- `take_site(writer, site)`: both, before anything of the site is written (a crawl's start, an own
  answer, a file, a fact, a deploy): when the claim changed, every page's content hash is cleared
  (kb/pages.py redo_all_pages) so the next crawl learns each page again; True then.
- `reconcile(writer, site)`, at the start of a crawl (kb/crawl_start.py), finishes what a killed crawl
  left (kb/writer.py describes the write it cuts short): `deleting` ids are deleted; `writing` ids are
  deleted too (their chunk row may hold older text), and their pages are marked to be redone (content
  hash cleared); chunks with no live vector of the site's model have their pages redone as well.
  Chunks whose text is unchanged keep their vector: no embedding, no upsert.

Each takes the writer whose index, model and chunk sizes it checks (`KnowledgeWriter.config`).
"""

from __future__ import annotations

import logging

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.cloudflare.client import CloudflareError
from helppuff_crawl.kb.pages import redo_all_pages
from helppuff_crawl.kb.writer import KnowledgeWriter, in_lists

logger = logging.getLogger(__name__)

# The pages of chunks looked up by id within a site: the unary "+" keeps the planner on the primary
# key, as in kb/writer.py LIVE_VECTORS_SQL (tests/test_query_plans.py).
REDO_PAGES_SQL = ("UPDATE pages SET content_hash = '' WHERE site = ? AND url IN "
                  "(SELECT url FROM chunks WHERE +site = ? AND id IN ({marks}))")


class ModelMismatch(ValueError):
    """The vector index holds another model's vectors: mixing models in one index is refused."""


async def ensure_index(writer: KnowledgeWriter) -> None:
    """Create the Vectorize index (and its category metadata index) when it is missing.

    Two crawls may start at once on a new knowledge base (two workers): both find no index, and
    the second one's create is refused as a duplicate (HTTP 409). That index, or metadata index,
    was made by the other crawl a moment before: it is read and checked as any existing one."""
    client, index = writer.client, writer.index
    info = await client.vectorize_get_index(index)
    if info is None:
        try:
            await client.vectorize_create_index(index, writer.dimensions, "cosine", "HelpPuff knowledge base chunks")
            logger.info("Created Vectorize index %s (%d dimensions)", index, writer.dimensions)
        except CloudflareError as exc:
            if exc.status != 409:
                raise
        info = await client.vectorize_get_index(index) or {}
    dims = int((info.get("config") or {}).get("dimensions") or 0)
    if dims and dims != writer.dimensions:
        raise ModelMismatch(
            f"Vectorize index {index} holds {dims}-dimension vectors, but {writer.model} makes "
            f"{writer.dimensions}: mixing models in one index is refused (use another index with "
            f"HELPPUFF_VECTORIZE_INDEX)"
        )
    indexed = {m.get("propertyName") for m in await client.vectorize_list_metadata_indexes(index)}
    if "category" not in indexed:
        try:
            writer.mutations.made(await client.vectorize_create_metadata_index(index, "category", "string"))
        except CloudflareError as exc:
            if exc.status != 409:  # 409: another crawl made it meanwhile
                raise


async def take_site(writer: KnowledgeWriter, site: str) -> bool:
    """The index made ready and the site claimed; True (and every page to be learned again) when the
    site's model or chunk sizes changed. Whoever claims first after the change makes the pages learned
    again, so the change is never lost to a writer that only adds an answer or a file."""
    await ensure_index(writer)
    relearn = await claim_site(writer, site)
    if relearn:
        await redo_all_pages(writer.kb, site)
    return relearn


async def claim_site(writer: KnowledgeWriter, site: str) -> bool:
    """Record the site's model and chunk sizes; True when either changed (every page of the site is
    then learned again).

    Refused when another site in the same index uses another model.
    """
    kb, model = writer.kb, writer.model
    others = await kb.query(
        "SELECT site, model FROM site_index WHERE vector_index = ? AND site != ? AND model != ?",
        [writer.index, site, model],
    )
    if others:
        raise ModelMismatch(
            f"Vectorize index {writer.index} holds {others[0]['model']} vectors (site {others[0]['site']}); "
            f"{model} cannot be mixed into it (use another index with HELPPUFF_VECTORIZE_INDEX)"
        )
    sizes = writer.config.sizes
    before = await kb.first("SELECT model, chunk_min_tokens, chunk_max_tokens FROM site_index WHERE site = ?", [site])
    await kb.query(
        "INSERT INTO site_index (site, model, dimensions, vector_index, namespace, updated_at, chunk_min_tokens, "
        "chunk_max_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (site) DO UPDATE SET model = excluded.model, "
        "dimensions = excluded.dimensions, vector_index = excluded.vector_index, "
        "namespace = excluded.namespace, updated_at = excluded.updated_at, "
        "chunk_min_tokens = excluded.chunk_min_tokens, chunk_max_tokens = excluded.chunk_max_tokens",
        [site, model, writer.dimensions, writer.index, site, iso(utc_now()), sizes.min_tokens, sizes.max_tokens],
    )
    if before is None:
        return False
    if before["model"] != model:
        logger.warning("Site %s changes embedding model from %s to %s: every page is learned again",
                       site, before["model"], model)
        return True
    if (before["chunk_min_tokens"], before["chunk_max_tokens"]) != (sizes.min_tokens, sizes.max_tokens):
        logger.warning("Site %s changes chunk sizes from %s-%s to %s-%s tokens: every page is learned again",
                       site, before["chunk_min_tokens"], before["chunk_max_tokens"], sizes.min_tokens,
                       sizes.max_tokens)
        return True
    return False


async def reconcile(writer: KnowledgeWriter, site: str) -> dict[str, int]:
    """Finish what a killed crawl left; returns counts of what was mended."""
    kb = writer.kb
    report = {"deleted_vectors": 0, "pages_redone": 0}
    rows = await kb.query("SELECT id, state FROM vectors WHERE site = ? AND state != 'live'", [site])
    ids = [row["id"] for row in rows]
    if ids:
        # Pages whose write was cut short: redo them (their chunk rows may be old or new).
        for part in in_lists(ids, 2):
            await kb.query(REDO_PAGES_SQL.format(marks=", ".join("?" for _ in part)), [site, site, *part])
        await writer.delete_vectors(ids)
        report["deleted_vectors"] = len(ids)
    # Chunks without a live vector of the current model: their pages are redone.
    missing = await kb.query(
        "SELECT DISTINCT c.url FROM chunks c LEFT JOIN vectors v ON v.id = c.id AND v.state = 'live' "
        "AND v.model = ? WHERE c.site = ? AND v.id IS NULL",
        [writer.model, site],
    )
    for row in missing:
        await kb.query("UPDATE pages SET content_hash = '' WHERE site = ? AND url = ?", [site, row["url"]])
    report["pages_redone"] = len(missing)
    if any(report.values()):
        logger.warning("Knowledge base of %s mended after an interrupted crawl: %s", site, report)
    return report
