"""Write a page's chunks to D1 and their vectors to Vectorize, so that a crash never leaves half
a page: the page row records success only after both writes, and no vector is ever orphaned.

The `vectors` table in D1 is the manifest of what Vectorize holds. For one page:

1. the ids about to be written are recorded as `writing` (intent);
2. the new vectors are upserted to Vectorize (vector id = chunk id, the site's namespace,
   metadata: category, page, url);
3. one D1 batch (one transaction) replaces the page's chunks (FTS5 follows by triggers), marks
   the written ids `live`, marks the ids that went away `deleting`, and saves the page row;
4. the `deleting` ids are deleted from Vectorize, then from the manifest.

`reconcile(site)` at the start of a crawl finishes what a killed crawl left: `deleting` ids are
deleted; `writing` ids are deleted too (their chunk row may hold older text), and their pages are
marked to be redone (content hash cleared); chunks with no live vector of the site's model have
their pages redone as well. Chunks whose text is unchanged keep their vector: no embedding, no
upsert.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from helppuff_crawl.cloudflare.client import CloudflareClient
from helppuff_crawl.knowledge import KnowledgeBase, iso, utc_now
from helppuff_crawl.sitefacts import FACTS_TITLE, FACTS_URL, passage
from helppuff_crawl.text.chunking import Chunk, ChunkMeta, chunk_page
from helppuff_crawl.text.hashing import text_hash

logger = logging.getLogger(__name__)

EmbedFn = Callable[[list[str]], Awaitable[list[list[float]]]]
_BATCH_IDS = 100  # ids per Vectorize get/delete call and per D1 IN (...) list
_PATH_SEPARATOR = " › "


class ModelMismatch(ValueError):
    """The vector index holds another model's vectors: mixing models in one index is refused."""


@dataclass(frozen=True)
class ChunkRow:
    """A chunk as stored: the D1 row and what its vector needs."""

    id: str
    url: str
    seq: int
    ordinal: int
    heading_path: tuple[str, ...]
    anchor: str
    title: str
    category: str
    text: str
    prefix: str
    is_faq: bool
    oversized: bool
    tokens: int
    content_hash: str

    @classmethod
    def from_chunk(cls, chunk: Chunk, seq: int, url: str, title: str, category: str) -> ChunkRow:
        return cls(
            id=chunk.id, url=url, seq=seq, ordinal=chunk.ordinal, heading_path=tuple(chunk.heading_path),
            anchor=chunk.anchor, title=title, category=category, text=chunk.text, prefix=chunk.prefix,
            is_faq=chunk.is_faq, oversized=chunk.oversized, tokens=chunk.tokens,
            content_hash=text_hash(chunk.embed_text),
        )

    @property
    def embed_text(self) -> str:
        return self.prefix + self.text

    def metadata(self) -> dict[str, str]:
        link = f"{self.url}#{self.anchor}" if self.anchor else self.url
        return {"category": self.category, "page": self.url, "url": link}


def _chunks(items: Sequence[Any], size: int = _BATCH_IDS) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


class KnowledgeWriter:
    """Chunks and vectors of the sites in one D1 database and one Vectorize index."""

    def __init__(self, client: CloudflareClient, database: str, index: str, model: str, dimensions: int) -> None:
        self.client = client
        self.database = database
        self.index = index
        self.model = model
        self.dimensions = dimensions
        self.vector_writes = 0
        self.vector_deletes = 0

    # --- the index and the site's model --------------------------------------------------

    async def ensure_index(self) -> None:
        """Create the Vectorize index (and its category metadata index) when it is missing."""
        info = await self.client.vectorize_get_index(self.index)
        if info is None:
            await self.client.vectorize_create_index(self.index, self.dimensions, "cosine",
                                                     "HelpPuff knowledge base chunks")
            await self.client.vectorize_create_metadata_index(self.index, "category", "string")
            logger.info("Created Vectorize index %s (%d dimensions)", self.index, self.dimensions)
            return
        dims = int((info.get("config") or {}).get("dimensions") or 0)
        if dims and dims != self.dimensions:
            raise ModelMismatch(
                f"Vectorize index {self.index} holds {dims}-dimension vectors, but {self.model} makes "
                f"{self.dimensions}: mixing models in one index is refused (use another index with "
                f"HELPPUFF_VECTORIZE_INDEX)"
            )
        indexed = {m.get("propertyName") for m in await self.client.vectorize_list_metadata_indexes(self.index)}
        if "category" not in indexed:
            await self.client.vectorize_create_metadata_index(self.index, "category", "string")

    async def claim_site(self, site: str) -> bool:
        """Record the site's model; True when it changed (every page of the site is then re-embedded).

        Refused when another site in the same index uses another model.
        """
        others = await self.client.d1_query(
            self.database, "SELECT site, model FROM site_index WHERE vector_index = ? AND site != ? AND model != ?",
            [self.index, site, self.model],
        )
        if others:
            raise ModelMismatch(
                f"Vectorize index {self.index} holds {others[0]['model']} vectors (site {others[0]['site']}); "
                f"{self.model} cannot be mixed into it (use another index with HELPPUFF_VECTORIZE_INDEX)"
            )
        rows = await self.client.d1_query(self.database, "SELECT model FROM site_index WHERE site = ?", [site])
        changed = bool(rows) and rows[0]["model"] != self.model
        await self.client.d1_query(
            self.database,
            "INSERT INTO site_index (site, model, dimensions, vector_index, namespace, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (site) DO UPDATE SET model = excluded.model, "
            "dimensions = excluded.dimensions, vector_index = excluded.vector_index, "
            "namespace = excluded.namespace, updated_at = excluded.updated_at",
            [site, self.model, self.dimensions, self.index, site, iso(utc_now())],
        )
        if changed:
            logger.warning("Site %s changes embedding model from %s to %s: every page is re-embedded",
                           site, rows[0]["model"], self.model)
        return changed

    # --- recovery -----------------------------------------------------------------------

    async def reconcile(self, site: str) -> dict[str, int]:
        """Finish what a killed crawl left; returns counts of what was mended."""
        report = {"deleted_vectors": 0, "pages_redone": 0}
        rows = await self.client.d1_query(
            self.database, "SELECT id, state FROM vectors WHERE site = ? AND state != 'live'", [site]
        )
        ids = [row["id"] for row in rows]
        if ids:
            # Pages whose write was cut short: redo them (their chunk rows may be old or new).
            for part in _chunks(ids):
                marks = ", ".join("?" for _ in part)
                await self.client.d1_query(
                    self.database,
                    f"UPDATE pages SET content_hash = '' WHERE site = ? AND url IN "
                    f"(SELECT url FROM chunks WHERE site = ? AND id IN ({marks}))",
                    [site, site, *part],
                )
            await self._delete_vectors(ids)
            report["deleted_vectors"] = len(ids)
        # Chunks without a live vector of the current model: their pages are redone.
        missing = await self.client.d1_query(
            self.database,
            "SELECT DISTINCT c.url FROM chunks c LEFT JOIN vectors v ON v.id = c.id AND v.state = 'live' "
            "AND v.model = ? WHERE c.site = ? AND v.id IS NULL",
            [self.model, site],
        )
        for row in missing:
            await self.client.d1_query(
                self.database, "UPDATE pages SET content_hash = '' WHERE site = ? AND url = ?", [site, row["url"]]
            )
        report["pages_redone"] = len(missing)
        if any(report.values()):
            logger.warning("Knowledge base of %s mended after an interrupted crawl: %s", site, report)
        return report

    # --- per page -----------------------------------------------------------------------

    async def page_is_current(self, site: str, url: str) -> bool:
        """The page has chunks and every one has a live vector of the current model."""
        rows = await self.client.d1_query(
            self.database,
            "SELECT COUNT(*) AS total, COUNT(v.id) AS live FROM chunks c LEFT JOIN vectors v ON v.id = c.id "
            "AND v.state = 'live' AND v.model = ? AND v.content_hash = c.content_hash WHERE c.site = ? AND c.url = ?",
            [self.model, site, url],
        )
        return bool(rows) and rows[0]["total"] > 0 and rows[0]["total"] == rows[0]["live"]

    async def stale_pages(self, site: str) -> list[dict[str, Any]]:
        """Pages with kept Markdown whose chunks lack a live vector of the current model (e.g. after
        a model change, for a page that could not be fetched this time): re-embedded from Markdown."""
        return await self.client.d1_query(
            self.database,
            "SELECT DISTINCT p.url, p.title, p.category, p.markdown FROM pages p "
            "JOIN chunks c ON c.site = p.site AND c.url = p.url "
            "LEFT JOIN vectors v ON v.id = c.id AND v.state = 'live' AND v.model = ? "
            "AND v.content_hash = c.content_hash WHERE p.site = ? AND p.markdown != '' AND v.id IS NULL",
            [self.model, site],
        )

    async def reusable(self, site: str, chunks: Sequence[ChunkRow]) -> set[str]:
        """Ids of chunks whose live vector was embedded from the same text with the current model."""
        found: set[str] = set()
        wanted = {c.id: c.content_hash for c in chunks}
        for part in _chunks(list(wanted)):
            marks = ", ".join("?" for _ in part)
            rows = await self.client.d1_query(
                self.database,
                f"SELECT id, content_hash FROM vectors WHERE site = ? AND state = 'live' AND model = ? "
                f"AND id IN ({marks})",
                [site, self.model, *part],
            )
            found.update(row["id"] for row in rows if wanted.get(row["id"]) == row["content_hash"])
        return found

    async def write_page(self, site: str, url: str, chunks: Sequence[ChunkRow],
                         vectors: Mapping[str, Sequence[float]], page_row_sql: tuple[str, list[Any]] | None) -> None:
        """Replace the page's chunks and vectors, then save its row, in the order described above.

        `vectors` holds new vectors for the chunks that need one (the others are reusable).
        """
        now = iso(utc_now())
        old = await self.client.d1_query(self.database, "SELECT id FROM chunks WHERE site = ? AND url = ?", [site, url])
        new_ids = {c.id for c in chunks}
        removed = [row["id"] for row in old if row["id"] not in new_ids]
        to_write = [c for c in chunks if c.id in vectors]

        if to_write:
            await self.client.d1_batch(self.database, [
                ("INSERT INTO vectors (id, site, namespace, model, content_hash, state, updated_at) "
                 "VALUES (?, ?, ?, ?, ?, 'writing', ?) ON CONFLICT (id) DO UPDATE SET state = 'writing', "
                 "updated_at = excluded.updated_at",
                 [c.id, site, site, self.model, c.content_hash, now])
                for c in to_write
            ])
            for part in _chunks(to_write, 500):
                await self.client.vectorize_upsert(self.index, [
                    {"id": c.id, "values": list(vectors[c.id]), "namespace": site, "metadata": c.metadata()}
                    for c in part
                ])
                self.vector_writes += len(part)

        statements: list[tuple[str, list[Any]]] = [("DELETE FROM chunks WHERE site = ? AND url = ?", [site, url])]
        for c in chunks:
            statements.append((
                "INSERT INTO chunks (id, site, url, ordinal, heading_path, headings, anchor, title, category, text, "
                "prefix, is_faq, oversized, tokens, seq, content_hash, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [c.id, site, url, c.ordinal, json.dumps(list(c.heading_path), ensure_ascii=False),
                 _PATH_SEPARATOR.join(c.heading_path[1:]), c.anchor, c.title, c.category, c.text, c.prefix,
                 int(c.is_faq), int(c.oversized), c.tokens, c.seq, c.content_hash, now],
            ))
        for c in to_write:
            statements.append((
                "UPDATE vectors SET state = 'live', model = ?, content_hash = ?, updated_at = ? WHERE id = ?",
                [self.model, c.content_hash, now, c.id],
            ))
        for part in _chunks(removed):
            marks = ", ".join("?" for _ in part)
            statements.append((f"UPDATE vectors SET state = 'deleting', updated_at = ? WHERE id IN ({marks})",
                               [now, *part]))
        if page_row_sql is not None:
            statements.append(page_row_sql)
        await self.client.d1_batch(self.database, statements)

        if removed:
            await self._delete_vectors(removed)

    async def remove_page(self, site: str, url: str, page_row_sql: tuple[str, list[Any]] | None = None) -> int:
        """Take a page's chunks and vectors out of the knowledge base; returns how many chunks went."""
        old = await self.client.d1_query(self.database, "SELECT id FROM chunks WHERE site = ? AND url = ?", [site, url])
        if not old and page_row_sql is None:
            return 0
        await self.write_page(site, url, [], {}, page_row_sql)
        return len(old)

    async def _delete_vectors(self, ids: Sequence[str]) -> None:
        for part in _chunks(list(ids)):
            await self.client.vectorize_delete_by_ids(self.index, list(part))
            marks = ", ".join("?" for _ in part)
            await self.client.d1_query(self.database, f"DELETE FROM vectors WHERE id IN ({marks})", list(part))
            self.vector_deletes += len(part)

    # --- checks -------------------------------------------------------------------------

    async def consistency(self, site: str) -> dict[str, Any]:
        """D1 chunk ids, the manifest and Vectorize agree for the site's namespace."""
        chunk_ids = {r["id"] for r in await self.client.d1_query(
            self.database, "SELECT id FROM chunks WHERE site = ?", [site])}
        manifest = {r["id"]: r["state"] for r in await self.client.d1_query(
            self.database, "SELECT id, state FROM vectors WHERE site = ?", [site])}
        stored: set[str] = set()
        wrong_namespace = 0
        for part in _chunks(sorted(chunk_ids | set(manifest)), 20):
            for vector in await self.client.vectorize_get_by_ids(self.index, list(part)):
                stored.add(vector["id"])
                if vector.get("namespace") not in (None, site):
                    wrong_namespace += 1
        missing = sorted(chunk_ids - stored)
        orphans = sorted(stored - chunk_ids)
        not_live = sorted(i for i, state in manifest.items() if state != "live")
        return {
            "chunks": len(chunk_ids), "vectors": len(stored), "missing_vectors": missing[:20],
            "orphan_vectors": orphans[:20], "manifest_not_live": not_live[:20], "wrong_namespace": wrong_namespace,
            "consistent": not missing and not orphans and not not_live and not wrong_namespace,
        }


async def write_passage_page(writer: KnowledgeWriter, embed: EmbedFn, site: str, url: str, title: str,
                             category: str, markdown: str) -> int:
    """Chunk `markdown` as a page of its own at `url` (the facts passage, an own answer, a file) and
    write it; only chunks whose text changed are embedded, and a page whose chunks are all stored
    as they are, each with its live vector, is not written again. Returns its chunks."""
    rows = [ChunkRow.from_chunk(c, seq, url, title, category)
            for seq, c in enumerate(chunk_page(markdown, ChunkMeta(site, url, title, category)))]
    reuse = await writer.reusable(site, rows)
    stored = {(row["id"], row["content_hash"]) for row in await writer.client.d1_query(
        writer.database, "SELECT id, content_hash FROM chunks WHERE site = ? AND url = ?", [site, url])}
    if len(reuse) == len(rows) and stored == {(row.id, row.content_hash) for row in rows}:
        return len(rows)  # unchanged
    todo = [row for row in rows if row.id not in reuse]
    vectors = dict(zip((row.id for row in todo), await embed([row.embed_text for row in todo]), strict=True)) \
        if todo else {}
    await writer.write_page(site, url, rows, vectors, None)
    return len(rows)


async def write_facts_passage(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str) -> int:
    """Rebuild the site's facts passage from the stored facts (the owner's win); returns its chunks.

    One chunk with the business name, phone, email, address, hours and areas (and furniture that
    carried contact details), so "what's your number?" always has something to find.
    """
    return await write_passage_page(writer, embed, site, FACTS_URL, FACTS_TITLE, "contact",
                                    passage(await kb.facts(site)))
