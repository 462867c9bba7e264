"""Write a page's chunks to D1 and their vectors to Vectorize, so that a crash never leaves half
a page: the page row records success only after both writes, and no vector is ever orphaned.

The `vectors` table in D1 is the manifest of what Vectorize holds. For one page:

1. the ids about to be written are recorded as `writing` (intent);
2. the new vectors are upserted to Vectorize (vector id = chunk id, the site's namespace,
   metadata: category, page, url);
3. one D1 batch (one transaction) replaces the page's chunks (FTS5 follows by triggers), marks
   the written ids `live`, marks the ids that went away `deleting`, and saves the page row;
4. the `deleting` ids are deleted from Vectorize, then from the manifest.

`write_pages` does the same for many pages at once (one intent batch, one upload, one D1 transaction,
one delete), which is how a crawl writes: the calls per page are the production bottleneck (the API
allows 1,200 requests per 5 minutes). A crawl reads what the site holds once, at its start
(`KnownSite`, in kb/crawl_start.py's CrawlStart), and its writes keep it current, so that no page
costs a read.

What a write cut short leaves is mended at the next crawl's start by kb/site_index.py `reconcile`;
that module also checks the index and claims the site's place in it before anything is written. Vectorize
applies writes asynchronously: the writer keeps the mutations it made (kb/vector_mutations.py,
`mutations`) and waits for them (`wait_for_writes()`); nothing here reads a vector back to decide
anything (which vectors can be reused, what is stale: all of it is read from the manifest in D1), so
a write not applied yet cannot be misread, and `consistency()` reports such a vector as pending,
never as missing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.cloudflare.client import D1_MAX_PARAMS, MAX_UPSERT_VECTORS
from helppuff_crawl.schema.contract import HEADING_SEPARATOR
from helppuff_crawl.embed.models import default_model, embedding_model
from helppuff_crawl.kb.database import KnowledgeBase, Statement
from helppuff_crawl.kb.vector_mutations import VectorMutations
from helppuff_crawl.text.chunking import Chunk, ChunkSizes
from helppuff_crawl.text.hashing import text_hash

logger = logging.getLogger(__name__)

_VECTOR_IDS = 100  # ids per Vectorize get_by_ids / delete_by_ids call
_UPSERT_BYTES = 50_000_000  # half of Vectorize's 100 MB upload limit: room for the NDJSON framing
_GET_IDS = 20  # ids per Vectorize get_by_ids call
_PROBE_VECTORS = 2  # vectors of the last upsert read back to see it applied


@dataclass(frozen=True)
class IndexConfig:
    """Where a site's passages go and how they are made: the Vectorize index, the embedding model
    (one per index) and the chunk sizes, all three recorded per site in D1 `site_index`."""

    index: str
    model: str
    dimensions: int
    sizes: ChunkSizes

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], remote: bool) -> IndexConfig:
        """HELPPUFF_VECTORIZE_INDEX, HELPPUFF_EMBED_MODEL ("" picks the default for `remote`),
        HELPPUFF_CHUNK_MIN_TOKENS and HELPPUFF_CHUNK_MAX_TOKENS; ValueError naming a bad one."""
        index = str(settings.get("HELPPUFF_VECTORIZE_INDEX") or "")
        if not index:
            raise ValueError("HELPPUFF_VECTORIZE_INDEX must name the Vectorize index")
        model = embedding_model(str(settings.get("HELPPUFF_EMBED_MODEL") or default_model(remote)))
        return cls(index, model.id, model.dimensions, ChunkSizes.from_settings(settings))


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


@dataclass
class KnownSite:
    """What the knowledge base holds of one site, read once (`load`) and kept current by the writes
    made through `KnowledgeWriter.write_pages(..., known=)`: page rows (without Markdown), each page's
    chunk ids and content hashes, and the live vectors of the current model."""

    site: str
    model: str
    pages: dict[str, dict[str, Any]]
    chunks: dict[str, dict[str, str]]  # url -> {chunk id: content hash}
    live: dict[str, str]  # vector id -> content hash it was embedded from

    @classmethod
    async def load(cls, kb: KnowledgeBase, site: str, model: str) -> KnownSite:
        from helppuff_crawl.kb.pages import known_pages_statement

        pages, chunks, live = await kb.batch([
            known_pages_statement(site),
            ("SELECT id, url, content_hash FROM chunks WHERE site = ?", [site]),
            ("SELECT id, content_hash FROM vectors WHERE site = ? AND state = 'live' AND model = ?", [site, model]),
        ])
        by_url: dict[str, dict[str, str]] = {}
        for row in chunks:
            by_url.setdefault(row["url"], {})[row["id"]] = row["content_hash"]
        return cls(site, model, {row["url"]: row for row in pages}, by_url,
                   {row["id"]: row["content_hash"] for row in live})

    def reusable(self, rows: Sequence[ChunkRow]) -> set[str]:
        """As KnowledgeWriter.reusable, from what was read."""
        return {row.id for row in rows if self.live.get(row.id) == row.content_hash}

    def wrote(self, write: PageWrite, removed: Iterable[str]) -> None:
        if write.rows is not None:
            self.chunks[write.url] = {row.id: row.content_hash for row in write.rows}
            self.live.update({row.id: row.content_hash for row in write.rows if row.id in write.vectors})
        for vector_id in removed:
            self.live.pop(vector_id, None)


@dataclass(frozen=True)
class PageWrite:
    """One page's part of a write: its chunks (None: leave them as they are) with new vectors for
    those that need one, and its row."""

    url: str
    rows: Sequence[ChunkRow] | None
    vectors: Mapping[str, Sequence[float]]
    page_row: Statement | None


def _parts(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


# Rows looked up by id within a site. The unary "+" keeps SQLite's planner (D1's too) off the
# site's index (chunks_site_url, vectors_site_state): on "site = ?" it would read every row of the
# site to find the few asked for, where the primary key finds each at once ("Disqualifying WHERE
# clause terms using unary-+", the SQLite query optimizer overview). tests/test_query_plans.py.
LIVE_VECTORS_SQL = ("SELECT id, content_hash FROM vectors WHERE +site = ? AND state = 'live' AND model = ? "
                    "AND id IN ({marks})")


def in_lists(ids: Sequence[Any], fixed: int) -> Iterable[Sequence[Any]]:
    """`ids` in parts that fit a D1 statement's `IN (...)` beside `fixed` other bound parameters."""
    return _parts(ids, D1_MAX_PARAMS - fixed)


_ROWS_BYTES = 60_000  # text bound in one multi-row statement: chunk rows stay far from D1's 2 MB row cap


def _rows_statements(sql: str, row: str, values: Sequence[Sequence[Any]],
                     max_bytes: int | None = None) -> list[Statement]:
    """Multi-row statements (`sql` with `{rows}` for `row, row, ...`) for `values`, each within D1's
    100 bound parameters, and `max_bytes` of text values when given."""
    if not values:
        return []
    per_row = len(values[0])
    statements: list[Statement] = []
    group: list[Sequence[Any]] = []
    size = 0
    for item in values:
        weight = sum(len(v) for v in item if isinstance(v, str))
        full = (len(group) + 1) * per_row > D1_MAX_PARAMS or (max_bytes is not None and group
                                                               and size + weight > max_bytes)
        if full:
            statements.append((sql.format(rows=", ".join(row for _ in group)), [v for g in group for v in g]))
            group, size = [], 0
        group.append(item)
        size += weight
    statements.append((sql.format(rows=", ".join(row for _ in group)), [v for g in group for v in g]))
    return statements


def _upsert_parts(vectors: Sequence[Any], dimensions: int) -> Iterable[Sequence[Any]]:
    """Vectors in parts Vectorize takes in one upload: at most 5,000, and well under 100 MB."""
    per_vector = 24 * dimensions + 1_000  # a float as JSON text, with its metadata and id
    return _parts(vectors, max(1, min(MAX_UPSERT_VECTORS, _UPSERT_BYTES // per_vector)))


class KnowledgeWriter:
    """Chunks and vectors of the sites in one D1 database and one Vectorize index.

    `wait`: seconds `wait_for_writes()` and `consistency()` wait for Vectorize to apply this writer's
    writes (None: the project's HELPPUFF_VECTORIZE_WAIT).
    """

    def __init__(self, kb: KnowledgeBase, config: IndexConfig, wait: float | None = None) -> None:
        self.kb = kb
        self.client = kb.client
        self.config = config
        self.index = config.index
        self.model = config.model
        self.dimensions = config.dimensions
        self.mutations = VectorMutations(kb.client, config.index, wait)  # made, not yet seen applied
        self.vector_writes = 0
        self.vector_deletes = 0

    @property
    def last_mutation(self) -> str | None:
        """The last mutation id Vectorize gave this writer."""
        return self.mutations.last

    @property
    def pending_ids(self) -> set[str]:
        """Ids of the vectors this writer wrote or deleted whose mutation is not seen applied yet."""
        return self.mutations.pending_ids

    async def wait_for_writes(self, timeout: float | None = None) -> bool:
        """Wait (at most `timeout` seconds; None: `wait`) until Vectorize has applied every write this
        writer made; True when it has, False when some are still pending."""
        return await self.mutations.wait(timeout)

    # --- per page -----------------------------------------------------------------------

    async def stale_pages(self, site: str, cleared_too: bool = False) -> list[dict[str, Any]]:
        """Pages with kept Markdown whose chunks lack a live vector of the current model (e.g. after
        a model change, for a page that could not be fetched this time): learned again from Markdown.

        `cleared_too` (after a change of chunk sizes): also the pages with chunks whose content hash
        is still cleared, i.e. that the crawl did not learn again, so their chunks are the old sizes'.
        """
        return await self.kb.query(
            "SELECT DISTINCT p.url, p.title, p.category, p.markdown FROM pages p "
            "JOIN chunks c ON c.site = p.site AND c.url = p.url "
            "LEFT JOIN vectors v ON v.id = c.id AND v.state = 'live' AND v.model = ? "
            "AND v.content_hash = c.content_hash WHERE p.site = ? AND p.markdown != '' "
            "AND (v.id IS NULL OR (? AND p.content_hash = ''))",
            [self.model, site, 1 if cleared_too else 0],
        )

    async def reusable(self, site: str, chunks: Sequence[ChunkRow]) -> set[str]:
        """Ids of chunks whose live vector was embedded from the same text with the current model."""
        found: set[str] = set()
        wanted = {c.id: c.content_hash for c in chunks}
        for part in in_lists(list(wanted), 2):
            rows = await self.kb.query(LIVE_VECTORS_SQL.format(marks=", ".join("?" for _ in part)),
                                       [site, self.model, *part])
            found.update(row["id"] for row in rows if wanted.get(row["id"]) == row["content_hash"])
        return found

    async def stored_chunks(self, site: str, url: str) -> set[tuple[str, str]]:
        """(id, content hash) of the chunks the page has in D1 now."""
        rows = await self.kb.query("SELECT id, content_hash FROM chunks WHERE site = ? AND url = ?", [site, url])
        return {(row["id"], row["content_hash"]) for row in rows}

    async def write_page(self, site: str, url: str, chunks: Sequence[ChunkRow],
                         vectors: Mapping[str, Sequence[float]], page_row: Statement | None) -> None:
        """Replace the page's chunks and vectors, then save its row, in the order described above.

        `vectors` holds new vectors for the chunks that need one (the others are reusable).
        """
        await self.write_pages(site, [PageWrite(url, chunks, vectors, page_row)])

    async def write_pages(self, site: str, writes: Sequence[PageWrite], known: KnownSite | None = None) -> None:
        """Write many pages in the order described above, each step once for all of them: the
        intent, the upload, one D1 transaction (every page's chunks, vector states and row), the
        deletes. `known`: the site as read at the crawl's start (no read of the old chunk ids),
        updated here once the transaction is in."""
        now = iso(utc_now())
        chunked = [w for w in writes if w.rows is not None]
        old: dict[str, list[str]] = {w.url: [] for w in chunked}
        if known is not None:
            for w in chunked:
                old[w.url] = list(known.chunks.get(w.url, {}))
        else:
            for part in in_lists([w.url for w in chunked], 1):
                marks = ", ".join("?" for _ in part)
                for row in await self.kb.query(f"SELECT id, url FROM chunks WHERE site = ? AND url IN ({marks})",
                                               [site, *part]):
                    old[row["url"]].append(row["id"])
        kept = {row.id for w in chunked for row in w.rows or ()}
        removed = sorted({i for ids in old.values() for i in ids} - kept)
        to_write = [row for w in chunked for row in w.rows or () if row.id in w.vectors]
        vectors = {row_id: vector for w in chunked for row_id, vector in w.vectors.items()}

        if to_write:
            await self.kb.batch(_rows_statements(
                "INSERT INTO vectors (id, site, namespace, model, content_hash, state, updated_at) VALUES {rows} "
                "ON CONFLICT (id) DO UPDATE SET state = 'writing', updated_at = excluded.updated_at",
                "(?, ?, ?, ?, ?, 'writing', ?)",
                [[c.id, site, site, self.model, c.content_hash, now] for c in to_write]))
            for part in _upsert_parts(to_write, self.dimensions):
                mutation = await self.client.vectorize_upsert(self.index, [
                    {"id": c.id, "values": list(vectors[c.id]), "namespace": site, "metadata": c.metadata()}
                    for c in part
                ])
                self.mutations.made(mutation, (c.id for c in part),
                           upserted={c.id: vectors[c.id] for c in part[-_PROBE_VECTORS:]})
                self.vector_writes += len(part)

        statements: list[Statement] = []
        for w in writes:
            if w.rows is not None:
                statements.append(("DELETE FROM chunks WHERE site = ? AND url = ?", [site, w.url]))
                statements += _rows_statements(
                    "INSERT INTO chunks (id, site, url, ordinal, heading_path, headings, anchor, title, category, "
                    "text, prefix, is_faq, oversized, tokens, seq, content_hash, updated_at) VALUES {rows}",
                    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [[c.id, site, w.url, c.ordinal, json.dumps(list(c.heading_path), ensure_ascii=False),
                      HEADING_SEPARATOR.join(c.heading_path[1:]), c.anchor, c.title, c.category, c.text, c.prefix,
                      int(c.is_faq), int(c.oversized), c.tokens, c.seq, c.content_hash, now] for c in w.rows],
                    max_bytes=_ROWS_BYTES)
            if w.page_row is not None:
                statements.append(w.page_row)
        for c in to_write:
            statements.append((
                "UPDATE vectors SET state = 'live', model = ?, content_hash = ?, updated_at = ? WHERE id = ?",
                [self.model, c.content_hash, now, c.id],
            ))
        for part in in_lists(removed, 1):
            marks = ", ".join("?" for _ in part)
            statements.append((f"UPDATE vectors SET state = 'deleting', updated_at = ? WHERE id IN ({marks})",
                               [now, *part]))
        if statements:
            await self.kb.batch(statements)
        if known is not None:
            for w in writes:
                known.wrote(w, removed)

        if removed:
            await self.delete_vectors(removed)

    async def remove_page(self, site: str, url: str, page_row: Statement | None = None) -> int:
        """Take a page's chunks and vectors out of the knowledge base; returns how many chunks went."""
        old = await self.kb.query("SELECT id FROM chunks WHERE site = ? AND url = ?", [site, url])
        if not old and page_row is None:
            return 0
        await self.write_page(site, url, [], {}, page_row)
        return len(old)

    async def delete_vectors(self, ids: Sequence[str]) -> None:
        """Delete vectors from Vectorize, then from the manifest (kb/site_index.py reconcile mends with it too)."""
        for part in _parts(list(ids), min(_VECTOR_IDS, D1_MAX_PARAMS)):
            mutation = await self.client.vectorize_delete_by_ids(self.index, list(part))
            self.mutations.made(mutation, part, deleted=part[-_GET_IDS:])
            marks = ", ".join("?" for _ in part)
            await self.kb.query(f"DELETE FROM vectors WHERE id IN ({marks})", list(part))
            self.vector_deletes += len(part)

    # --- checks -------------------------------------------------------------------------

    async def consistency(self, site: str, wait: float | None = None) -> dict[str, Any]:
        """D1 chunk ids, the manifest and Vectorize agree for the site's namespace.

        Waits first (at most `wait` seconds; None: the writer's `wait`) for the writes this writer made; a
        vector that still differs because this writer's write or delete of it is not applied yet is
        pending, never missing. (Another process's writes not applied yet cannot be told from lost
        ones; a crawl and the knowledge commands wait for theirs before they end.) `consistent` is
        true when nothing is missing, orphaned, half written, in another namespace, or pending.
        """
        await self.wait_for_writes(wait)
        chunk_ids = {r["id"] for r in await self.kb.query("SELECT id FROM chunks WHERE site = ?", [site])}
        manifest = {r["id"]: r["state"] for r in await self.kb.query(
            "SELECT id, state FROM vectors WHERE site = ?", [site])}
        stored: set[str] = set()
        wrong_namespace = 0
        for part in _parts(sorted(chunk_ids | set(manifest)), _GET_IDS):
            for vector in await self.client.vectorize_get_by_ids(self.index, list(part)):
                stored.add(vector["id"])
                if vector.get("namespace") not in (None, site):
                    wrong_namespace += 1
        unapplied = self.pending_ids
        pending = sorted(i for i in (chunk_ids ^ stored) if i in unapplied)
        missing = sorted(chunk_ids - stored - unapplied)
        orphans = sorted(stored - chunk_ids - unapplied)
        not_live = sorted(i for i, state in manifest.items() if state != "live")
        return {
            "chunks": len(chunk_ids), "vectors": len(stored), "missing_vectors": missing[:20],
            "orphan_vectors": orphans[:20], "manifest_not_live": not_live[:20], "wrong_namespace": wrong_namespace,
            "pending": len(pending), "pending_vectors": pending[:20],
            "consistent": not missing and not orphans and not not_live and not wrong_namespace and not pending,
        }
