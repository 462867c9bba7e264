"""Record the run and every page in the knowledge base; learn each changed page's chunks.

On open: runs left "running" by a dead process are marked failed; the vector index and the
site's embedding model are checked (mixing models in one index is refused); what a killed crawl
left half-written is mended (writer.reconcile); this run's row is created, with a heartbeat.

Per page: a page that was not learned from (unticked, blocked, gone, failed, skipped, empty) is
one row. A learned page whose content hash matches the last crawl, with all its chunks and live
vectors, is "unchanged": no embedding, no vector write. Otherwise its chunks that need a vector
are queued for embedding, in batches filled across pages (EmbeddingBatcher), and the page is
written (writer.write_page: chunks, vectors, then the page row) once its vectors are back. The
item is not held while it waits, so the crawl never stalls on a partial batch.

After the last page: the batches are flushed; the crawl's facts are saved (never over the
owner's) and the facts passage is rebuilt; pages unticked or gone leave the knowledge base; the
day's embedding use is priced and added; the run becomes "done", or "failed" with the reason.

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.store.StorePipeline": 900}.
Settings: HELPPUFF_STORE_ENABLED, HELPPUFF_DATA_DIR, HELPPUFF_D1_DATABASE, HELPPUFF_VECTORIZE_INDEX,
HELPPUFF_EMBED_MODEL, HELPPUFF_EMBED_BATCH_SIZE, HELPPUFF_EMBED_CONCURRENCY, HELPPUFF_RETRY_DELAYS,
HELPPUFF_RUN_STALE_AFTER, HELPPUFF_RUN_HEARTBEAT, the Cloudflare credentials.
Stats: helppuff/store/{pages,unchanged,removed_pages}, helppuff/store/status/<status>,
helppuff/embed/{texts,batches,reused,calls,tokens}, helppuff/vectors/{written,deleted}.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured

from helppuff_crawl.answers import write_own_answers
from helppuff_crawl.batcher import EmbeddingBatcher
from helppuff_crawl.cloudflare.pricing import neurons
from helppuff_crawl.embedding import MODELS, WorkersAIEmbedder, default_model
from helppuff_crawl.files import write_files
from helppuff_crawl.items import Page
from helppuff_crawl.knowledge import (
    BackendConfig,
    KnowledgeBase,
    iso,
    page_row_statement,
    utc_now,
)
from helppuff_crawl.sitefacts import SITE_BLOCKS_KEY, fact_values
from helppuff_crawl.text.chunking import ChunkMeta, chunk_page
from helppuff_crawl.text.facts import Facts, merge_facts
from helppuff_crawl.text.hashing import content_hash
from helppuff_crawl.writer import ChunkRow, KnowledgeWriter, write_facts_passage

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_LEARNED = ("ok", "unchanged")
_FAILED = ("failed", "blocked", "gone")
_LEAVE = ("unticked", "gone")  # pages whose chunks leave the knowledge base after the crawl
_FACTS_FIRST = ("home", "contact", "about")  # facts from these pages win over the others


@dataclass(frozen=True)
class StoreConfig:
    site: str
    start_url: str
    retry_delays: tuple[int, ...]
    stale_after: float
    heartbeat: float
    index: str
    model: str
    dimensions: int
    batch_size: int
    concurrency: int

    @classmethod
    def from_settings(cls, settings: BaseSettings, remote: bool) -> StoreConfig:
        site = settings.get("HELPPUFF_SITE") or ""
        if not site:
            raise ValueError("HELPPUFF_SITE is not set: run the 'site' spider (it sets it from its arguments)")
        delays = tuple(int(d) for d in settings.getlist("HELPPUFF_RETRY_DELAYS", [900, 7200]))
        if any(d <= 0 for d in delays):
            raise ValueError(f"HELPPUFF_RETRY_DELAYS must be positive seconds, got {list(delays)}")
        heartbeat = settings.getfloat("HELPPUFF_RUN_HEARTBEAT", 30.0)
        if heartbeat <= 0:
            raise ValueError(f"HELPPUFF_RUN_HEARTBEAT must be > 0 seconds, got {heartbeat}")
        model = settings.get("HELPPUFF_EMBED_MODEL") or default_model(remote)
        if model not in MODELS:
            raise ValueError(f"HELPPUFF_EMBED_MODEL must be one of {', '.join(MODELS)}, got {model!r}")
        batch = settings.getint("HELPPUFF_EMBED_BATCH_SIZE", 32)
        if not 1 <= batch <= 32:
            raise ValueError(f"HELPPUFF_EMBED_BATCH_SIZE must be 1-32 (Workers AI's limit per call), got {batch}")
        concurrency = settings.getint("HELPPUFF_EMBED_CONCURRENCY", 2)
        if concurrency < 1:
            raise ValueError(f"HELPPUFF_EMBED_CONCURRENCY must be >= 1, got {concurrency}")
        index = settings.get("HELPPUFF_VECTORIZE_INDEX") or "helppuff"
        return cls(
            site=site,
            start_url=settings.get("HELPPUFF_START_URL") or "",
            retry_delays=delays,
            stale_after=settings.getfloat("HELPPUFF_RUN_STALE_AFTER", 600.0),
            heartbeat=heartbeat,
            index=index,
            model=model,
            dimensions=MODELS[model],
            batch_size=batch,
            concurrency=concurrency,
        )


class StorePipeline:
    def __init__(self, crawler: Crawler, kb: KnowledgeBase, remote: bool) -> None:
        if not crawler.settings.getbool("HELPPUFF_STORE_ENABLED", True):
            raise NotConfigured("HELPPUFF_STORE_ENABLED is off")
        self.config = StoreConfig.from_settings(crawler.settings, remote)
        self.crawler = crawler
        self.stats = crawler.stats
        self.kb = kb
        self.writer = KnowledgeWriter(kb.client, kb.database, self.config.index, self.config.model,
                                      self.config.dimensions)
        self.embedder = WorkersAIEmbedder(kb.client, self.config.model, self.config.dimensions,
                                          max_batch=self.config.batch_size)
        self.batcher: EmbeddingBatcher | None = None
        self.run_id = ""
        self.counts = {"pages_found": 0, "pages_ticked": 0, "pages_ok": 0, "pages_failed": 0}
        self.home: Page | None = None
        self._writes: set[asyncio.Task[None]] = set()
        self._facts: list[tuple[int, str, Facts]] = []
        self._site_blocks: list[str] = []
        self._leaving: list[str] = []
        self._heartbeat: asyncio.Task[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        backend = BackendConfig.from_settings(crawler.settings)
        pipeline = cls(crawler, KnowledgeBase.open(backend), backend.remote)
        # The close reason is known only at spider_closed (after the pipelines' close_spider).
        crawler.signals.connect(pipeline.spider_closed, signal=signals.spider_closed)
        return pipeline

    # --- open ---------------------------------------------------------------------------

    async def open_spider(self) -> None:
        site = self.config.site
        await self.kb.reap_dead_runs(self.config.stale_after)
        self.run_id = await self.kb.start_run(site, self.config.start_url)
        self.stats.set_value("helppuff/run_id", self.run_id)
        self._heartbeat = asyncio.ensure_future(self._beat())
        self.batcher = EmbeddingBatcher(self.embedder.embed, self.config.batch_size, self.config.concurrency,
                                        on_batch=lambda texts: self.stats.inc_value("helppuff/embed/batches"))
        await self.writer.ensure_index()
        if await self.writer.claim_site(site):
            await self.kb.client.d1_query(self.kb.database, "UPDATE pages SET content_hash = '' WHERE site = ?",
                                          [site])
        mended = await self.writer.reconcile(site)
        for key, value in mended.items():
            if value:
                self.stats.set_value(f"helppuff/store/mended/{key}", value)
        logger.info("Crawl run %s of %s started (embedding with %s into %s)", self.run_id, site,
                    self.config.model, self.config.index, extra={"spider": self.crawler.spider})

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.config.heartbeat)
            try:
                await self.kb.heartbeat(self.run_id, self.counts)
            except Exception:
                logger.warning("Heartbeat for run %s failed", self.run_id, exc_info=True)

    # --- per page -----------------------------------------------------------------------

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        if item.source == "start":
            self.home = item
        previous = await self.kb.page(item.site, item.url)
        if item.status != "fetched":
            row = self._row(item, previous, item.status)
            await self.kb.save_page(row)
            self._done(item, row["status"])
            if item.status in _LEAVE and previous and previous.get("content_hash"):
                self._leaving.append(item.url)
            return item

        item.content_hash = item.content_hash or content_hash(item.title, item.category, item.markdown)
        self._collect_facts(item)
        unchanged = (previous is not None and previous["status"] in _LEARNED
                     and previous.get("content_hash") == item.content_hash
                     and await self.writer.page_is_current(item.site, item.url))
        if unchanged:
            await self.kb.save_page(self._row(item, previous, "unchanged"))
            self.stats.inc_value("helppuff/store/unchanged")
            self._done(item, "unchanged")
            return item

        chunks = item.chunks or chunk_page(item.markdown, ChunkMeta(item.site, item.url, item.title, item.category))
        rows = [ChunkRow.from_chunk(c, seq, item.url, item.title, item.category) for seq, c in enumerate(chunks)]
        task = asyncio.ensure_future(self._learn(item, previous, rows))
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)
        item.status = "ok"  # written when its vectors are back; a failure is recorded on the row
        return item

    async def _learn(self, item: Page, previous: dict[str, Any] | None, rows: list[ChunkRow]) -> None:
        """Embed what changed (batched across pages), then write chunks, vectors and the page row."""
        assert self.batcher is not None
        try:
            reuse = await self.writer.reusable(item.site, rows)
            todo = [row for row in rows if row.id not in reuse]
            self.stats.inc_value("helppuff/embed/reused", len(rows) - len(todo))
            futures = self.batcher.submit([row.embed_text for row in todo])
            vectors = {row.id: vector for row, vector in zip(todo, await asyncio.gather(*futures), strict=True)}
            self.stats.inc_value("helppuff/embed/texts", len(todo))
            page_row = self._row(item, previous, "ok")
            await self.writer.write_page(item.site, item.url, rows, vectors, page_row_statement(page_row))
            self._done(item, "ok")
        except Exception as exc:
            reason = f"not stored: {type(exc).__name__}: {exc}".splitlines()[0][:300]
            logger.error("Page %s %s", item.url, reason, exc_info=True, extra={"spider": self.crawler.spider})
            item.reason = reason
            row = self._row(item, previous, "failed")
            row["content_hash"] = ""  # redo it next time
            with contextlib.suppress(Exception):
                await self.kb.save_page(row)
            self._done(item, "failed")

    def _collect_facts(self, item: Page) -> None:
        facts = Facts.from_dict(item.facts)
        facts.hours = {day: [tuple(span) for span in spans] for day, spans in facts.hours.items()}
        rank = _FACTS_FIRST.index(item.category) if item.category in _FACTS_FIRST else len(_FACTS_FIRST)
        self._facts.append((rank, item.url, facts))
        self._site_blocks.extend(item.site_blocks)

    def _row(self, item: Page, previous: dict[str, Any] | None, status: str) -> dict[str, Any]:
        retry_count = 0
        next_retry = None
        if status == "failed" or (status == "blocked" and item.http_status == 429):
            retry_count = int(previous["retry_count"]) + 1 if previous and previous["status"] == status else 1
            if retry_count <= len(self.config.retry_delays):
                delay = self.config.retry_delays[retry_count - 1]
                next_retry = iso(utc_now() + timedelta(seconds=delay))
        learned = status in _LEARNED
        before = previous or {}
        return {
            "site": item.site, "url": item.url, "category": item.category, "ticked": 1 if item.ticked else 0,
            "tick_reason": item.tick_reason, "source": item.source, "status": status,
            "reason": "" if learned else item.reason, "http_status": item.http_status,
            "final_url": item.final_url, "redirects": item.redirects, "rendered": 1 if item.rendered else 0,
            "title": item.title or before.get("title", ""), "description": item.description,
            # Markdown and hash are kept from the last good crawl when a page fails this time.
            "markdown": item.markdown if learned else before.get("markdown", ""),
            "content_hash": item.content_hash if learned else before.get("content_hash", ""),
            "fetched_at": item.fetched_at or None, "retry_count": retry_count, "next_retry_at": next_retry,
            "run_id": self.run_id,
        }

    def _done(self, item: Page, status: str) -> None:
        self.counts["pages_found"] += 1
        if item.ticked:
            self.counts["pages_ticked"] += 1
        if status in _LEARNED:
            self.counts["pages_ok"] += 1
        elif status in _FAILED:
            self.counts["pages_failed"] += 1
        self.stats.inc_value("helppuff/store/pages")
        self.stats.inc_value(f"helppuff/store/status/{status}")

    # --- after the last page ------------------------------------------------------------

    async def _after_last_page(self) -> None:
        assert self.batcher is not None
        await self.batcher.flush()
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)
        site = self.config.site
        # Pages not learned this time whose vectors are missing (a model change, a failed fetch):
        # re-embedded from their kept Markdown, with no fetch.
        stale = await self.writer.stale_pages(site)
        for page in stale:
            meta = ChunkMeta(site, page["url"], page["title"], page["category"])
            rows = [ChunkRow.from_chunk(c, seq, page["url"], page["title"], page["category"])
                    for seq, c in enumerate(chunk_page(page["markdown"], meta))]
            reuse = await self.writer.reusable(site, rows)
            todo = [row for row in rows if row.id not in reuse]
            vectors = dict(zip((r.id for r in todo), await self.embedder.embed([r.embed_text for r in todo]),
                               strict=True)) if todo else {}
            await self.writer.write_page(site, page["url"], rows, vectors, None)
        self.stats.set_value("helppuff/store/reembedded_from_markdown", len(stale))
        # Facts: home, contact and about pages first; the owner's keys are never overwritten.
        ordered = [facts for _, _, facts in sorted(self._facts, key=lambda entry: (entry[0], entry[1]))]
        if ordered:
            await self.kb.save_crawl_facts(site, fact_values(merge_facts(ordered)), self.config.start_url)
        if self._site_blocks:
            await self.kb.save_crawl_facts(site, {SITE_BLOCKS_KEY: list(dict.fromkeys(self._site_blocks))})
        passage_chunks = await write_facts_passage(self.kb, self.writer, self.embedder.embed, site)
        self.stats.set_value("helppuff/store/facts_passage_chunks", passage_chunks)
        # The owner's own answers and files: re-embedded only when the model changed.
        answer_chunks = await write_own_answers(self.kb, self.writer, self.embedder.embed, site)
        self.stats.set_value("helppuff/store/own_answer_chunks", answer_chunks)
        file_chunks = await write_files(self.kb, self.writer, self.embedder.embed, site)
        self.stats.set_value("helppuff/store/file_chunks", file_chunks)
        # Pages unticked or gone this crawl leave the knowledge base: rows' chunks and vectors.
        removed = 0
        for url in self._leaving:
            removed += 1 if await self.writer.remove_page(site, url) else 0
        self.stats.set_value("helppuff/store/removed_pages", removed)
        # The day's embedding use, priced in neurons.
        if self.embedder.calls:
            await self.kb.add_usage(f"{self.run_id}:embed", site, "embed", self.config.model, self.embedder.calls,
                                    self.embedder.prompt_tokens, 0,
                                    neurons(self.config.model, self.embedder.prompt_tokens))
        self.stats.set_value("helppuff/embed/calls", self.embedder.calls)
        self.stats.set_value("helppuff/embed/tokens", self.embedder.prompt_tokens)
        self.stats.set_value("helppuff/vectors/written", self.writer.vector_writes)
        self.stats.set_value("helppuff/vectors/deleted", self.writer.vector_deletes)

    def _outcome(self, reason: str) -> tuple[str, str]:
        """The run's status and reason once the last page is written."""
        if reason != "finished":
            return "failed", f"crawl stopped: {reason}"
        if self.counts["pages_ok"] == 0 and self.home is not None and self.home.status not in _LEARNED:
            return "failed", f"home page {self.home.status}: {self.home.reason}"
        if self.counts["pages_found"] == 0:
            return "failed", "nothing was found to crawl"
        return "done", reason

    async def spider_closed(self, spider: Any, reason: str) -> None:
        if not self.run_id:
            return
        status, why = "done", reason
        try:
            await self._after_last_page()
        except Exception as exc:
            logger.error("Finishing the crawl failed", exc_info=True, extra={"spider": spider})
            status, why = "failed", f"finishing failed: {type(exc).__name__}: {exc}".splitlines()[0][:300]
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
        if status == "done":
            status, why = self._outcome(reason)
        stats = {k: v for k, v in self.stats.get_stats().items()
                 if k.startswith(("helppuff/", "downloader/response_status"))}
        try:
            await self.kb.finish_run(self.run_id, status, why, self.counts, stats)
            logger.info("Crawl run %s %s: %s (%s)", self.run_id, status, why, self.counts,
                        extra={"spider": spider})
        finally:
            await self.kb.close()
