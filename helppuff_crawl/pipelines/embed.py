"""Embed each learned page's passages, in batches filled across pages, reusing unchanged ones.

For a fetched page with chunks (ChunkPipeline), the rows of its passages are made and checked against
what the site held when the crawl started, kept current by its writes (CrawlRun.start.known, read at
the first page): a row whose live vector was embedded from the same text by the site's model keeps
it (kb/learn.prepare). The others' texts go to the batcher (embed/batcher.py: at most
HELPPUFF_EMBED_BATCH_SIZE texts per call, HELPPUFF_EMBED_CONCURRENCY calls in flight, a partial batch
sent once no text came for HELPPUFF_EMBED_LINGER seconds; in the local cloud, sent at once while no
call is in flight, so that the model on this machine never waits for a fuller batch), and the page
waits for its vectors. The page leaves with `Page.lesson` (kb/learn.Lesson: rows and new vectors)
for the store pipeline; a failed call leaves the reason in `lesson.error`, so the store records the
page failed and the others carry on. Pages that were not fetched, or have no chunks, pass through untouched.

The embedder is injected (`EmbedPipeline(crawler, run, embedder)`; from_crawler builds the Workers AI
one for the model of the crawl's one writer, CrawlRun.writer, on Cloudflare or in the local cloud).
`embed(texts)` lends it to the store's work after the last page, counted in the same stats.

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.embed.EmbedPipeline": 700}, with the CrawlRun
extension (the knowledge base, the crawl's writer and its start). Settings: HELPPUFF_EMBED_ENABLED,
HELPPUFF_EMBED_BATCH_SIZE, HELPPUFF_EMBED_CONCURRENCY, HELPPUFF_EMBED_LINGER (the model is the writer's:
HELPPUFF_EMBED_MODEL, extensions/run.py).
Stats: helppuff/embed/{model,texts,reused,batches,calls,tokens,failed_pages}.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import NotConfigured

from helppuff_crawl.embed.batcher import EmbeddingBatcher
from helppuff_crawl.embed.models import EMBEDDING_MODELS, Embedder, WorkersAIEmbedder
from helppuff_crawl.extensions.run import CrawlRun
from helppuff_crawl.items import Page
from helppuff_crawl.kb.learn import Lesson, prepare, rows_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

    from helppuff_crawl.kb.writer import IndexConfig

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EmbedConfig:
    index: IndexConfig
    batch_size: int
    concurrency: int
    linger: float
    send_when_idle: bool  # the local cloud: the model is this machine's, its cost per text (embed/batcher.py)

    @classmethod
    def from_settings(cls, settings: BaseSettings, index: IndexConfig, remote: bool) -> EmbedConfig:
        """`index`: the crawl writer's (its model's batch limit); `remote`: on Cloudflare."""
        batch = settings.getint("HELPPUFF_EMBED_BATCH_SIZE")
        most = EMBEDDING_MODELS[index.model].max_batch
        batch = batch or most  # 0: the model's own batch
        if not 1 <= batch <= most:
            raise ValueError(f"HELPPUFF_EMBED_BATCH_SIZE must be 1-{most} ({index.model}'s texts per call), got {batch}")
        concurrency = settings.getint("HELPPUFF_EMBED_CONCURRENCY")
        if concurrency < 1:
            raise ValueError(f"HELPPUFF_EMBED_CONCURRENCY must be >= 1, got {concurrency}")
        linger = settings.getfloat("HELPPUFF_EMBED_LINGER")
        if linger <= 0:
            raise ValueError(f"HELPPUFF_EMBED_LINGER must be > 0 seconds, got {linger}")
        return cls(index, batch, concurrency, linger, send_when_idle=not remote)


class EmbedPipeline:
    def __init__(self, crawler: Crawler, run: CrawlRun, embedder: Embedder) -> None:
        if not crawler.settings.getbool("HELPPUFF_EMBED_ENABLED"):
            raise NotConfigured("HELPPUFF_EMBED_ENABLED is off")
        self.config = EmbedConfig.from_settings(crawler.settings, run.writer.config, run.backend.remote)
        self.crawler = crawler
        self.stats = crawler.stats
        self.run = run  # the crawl's writer and its start: which vectors can be reused
        self.embedder = embedder
        self.batcher: EmbeddingBatcher | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        run = crawler.get_extension(CrawlRun)
        if run is None:
            raise NotConfigured("the CrawlRun extension is off: there is no knowledge base to learn into")
        config = EmbedConfig.from_settings(crawler.settings, run.writer.config, run.backend.remote)
        embedder = WorkersAIEmbedder(run.kb.client, config.index.model, config.index.dimensions,
                                     max_batch=config.batch_size)
        return cls(crawler, run, embedder)

    def open_spider(self) -> None:
        self.stats.set_value("helppuff/embed/model", self.embedder.model)
        self.batcher = EmbeddingBatcher(self.embed, self.config.batch_size, self.config.concurrency,
                                        self.config.linger,
                                        on_batch=lambda texts: self.stats.inc_value("helppuff/embed/batches"),
                                        send_when_idle=self.config.send_when_idle)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """The embedder's vectors for `texts`, its calls and tokens counted in the stats."""
        try:
            return await self.embedder.embed(texts)
        finally:
            self.stats.set_value("helppuff/embed/calls", getattr(self.embedder, "calls", 0))
            self.stats.set_value("helppuff/embed/tokens", getattr(self.embedder, "prompt_tokens", 0))

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page) or item.status != "fetched" or not item.chunks:
            return item
        assert self.batcher is not None
        rows = rows_of(item.chunks, item.url, item.title, item.category)
        try:
            lesson = await prepare(self.run.writer, item.site, item.url, rows, self.run.start.known)
        except Exception as exc:
            logger.error("Page %s: the reuse check failed", item.url, exc_info=True,
                         extra={"spider": self.crawler.spider})
            item.lesson = _failed(item, rows, exc)
            return item
        item.lesson = lesson
        self.stats.inc_value("helppuff/embed/reused", lesson.reused)
        if not lesson.todo:
            return item
        futures = self.batcher.submit([row.embed_text for row in lesson.todo])
        try:
            lesson.take_vectors(list(await asyncio.gather(*futures)))
        except Exception as exc:
            logger.error("Page %s: embedding failed: %s", item.url, exc, extra={"spider": self.crawler.spider})
            lesson.error = _reason(exc)
            self.stats.inc_value("helppuff/embed/failed_pages")
            return item
        self.stats.inc_value("helppuff/embed/texts", len(lesson.todo))
        return item

    async def close_spider(self) -> None:
        if self.batcher is not None:
            await self.batcher.flush()


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def _failed(item: Page, rows: list[Any], exc: BaseException) -> Lesson:
    return Lesson(item.site, item.url, rows, list(rows), error=_reason(exc))
