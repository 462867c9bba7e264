"""Record every page of the crawl in the knowledge base, and write each learned page's passages.

What the site held when the crawl began is the crawl start's (CrawlRun.start, kb/crawl_start.py: the
index checked, the site claimed, a killed crawl's half-writes mended, then the site read once: page
rows, chunk ids, live vectors), read at the first page, so that no page costs a read; the writes go
through the crawl's one writer (CrawlRun.writer), which keeps that read current.

Pages are written together (kb/write_queue.py: HELPPUFF_STORE_BATCH_PAGES pages per send, or what is
queued after HELPPUFF_STORE_LINGER quiet seconds): a send is one D1 transaction for every page's
chunks and row, one Vectorize upload and one delete. Each page still waits for its own write and
is recorded with the status that was written; a shared send that fails is retried page by page, so
one bad page fails alone. Once nothing more can come (no request scheduled or downloading, the start
requests done, and every item the scraper holds a page waiting here for its write), what is queued
is sent at once: the crawl's last pages, and the work after them, need not wait out the linger.

Per page, after the embed pipeline:

- a page that was not learned from (unticked, blocked, gone, failed, skipped, empty) is one row;
  an unticked or gone page that had passages leaves the knowledge base after the crawl, and so does
  a duplicate of another page (skipped, Page.duplicate_of: its canonical link or the same content);
- a fetched page whose content hash matches its last crawl's, every passage keeping its live vector,
  is "unchanged": its row only, no write of chunks or vectors;
- any other fetched page with its lesson (Page.lesson) is written: chunks, new vectors, then its row
  (kb/writer.write_pages, in the writer's crash-safe order), and only then is it "ok". A failed
  write or embedding makes it "failed", "not stored: <why>", its content hash cleared so the next
  crawl redoes it;
- a fetched page with no lesson (HELPPUFF_CHUNK_ENABLED or HELPPUFF_EMBED_ENABLED off) is recorded
  "ok" with its Markdown, content hash cleared, and its passages are left as they were.

The page leaves with the status it was recorded with, so `item_scraped` (the run's counts, `helppuff
crawl`'s progress line) sees what was written.

A targeted crawl (CrawlRun.start.targeted: the pages named) records those pages only, and every other
page of the site is left as it is (its row, chunks and vectors). When the site's model or chunk sizes
changed, every page must be learned again: the crawl start made the crawl a full one (before the
spider's first request). Facts are taken only from the pages named whose facts win in a
full crawl (home, contact, about): a targeted crawl cannot merge another page's facts with those of
the pages it does not fetch as a full crawl does, so it leaves them to the next full crawl
(helppuff/targeted/facts_left).

After the last page (close_spider), when the crawl started (a crawl the run or the knowledge base
refused has nothing to finish): kb/after_crawl.py (pages learned again from kept Markdown, the
facts and the facts passage, own answers, files, pages leaving), with the embed pipeline's embedder.
A failure there is the stat helppuff/store/finish_error, and the run fails with it (CrawlRun). Then
the crawl waits (at most HELPPUFF_VECTORIZE_WAIT seconds) for Vectorize to apply the vector writes
it made, which it does asynchronously, so that when the run is done its passages can be found by
meaning too; writes still not applied then are counted (helppuff/vectors/pending) and logged, and
apply later (the run is not failed for them).

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.store.StorePipeline": 900}, with the CrawlRun
extension (the site, its start URL, the run id, the writer and the crawl start). Settings:
HELPPUFF_STORE_ENABLED, HELPPUFF_RETRY_DELAYS, HELPPUFF_STORE_BATCH_PAGES, HELPPUFF_STORE_LINGER (the
index, the model, the chunk sizes and HELPPUFF_VECTORIZE_WAIT are the writer's: extensions/run.py).
Stats: helppuff/store/{pages,unchanged,not_learned,removed_pages,reembedded_from_markdown,
facts_passage_chunks,own_answer_chunks,file_chunks,page_facts_kept,page_facts_dropped,self_check,finish_error,sends}, helppuff/store/status/<status>,
helppuff/vectors/{written,deleted,pending}, helppuff/targeted/facts_left (helppuff/store/mended/<what>: the run's).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import NotConfigured

from helppuff_crawl.clock import utc_now
from helppuff_crawl.cloudflare.client import CloudflareError
from helppuff_crawl.extensions.run import CrawlRun
from helppuff_crawl.items import Page
from helppuff_crawl.kb import pages
from helppuff_crawl.kb.after_crawl import after_crawl
from helppuff_crawl.kb.crawl_facts import FACTS_FIRST, CrawlFacts
from helppuff_crawl.kb.learn import Lesson
from helppuff_crawl.kb.facts_detect import CrawlPageTexts
from helppuff_crawl.kb.write_queue import PageWriteQueue
from helppuff_crawl.kb.writer import PageWrite
from helppuff_crawl.pipelines.embed import EmbedPipeline

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_LEAVE = ("unticked", "gone")  # pages whose passages leave the knowledge base after the crawl


@dataclass(frozen=True)
class StoreConfig:
    retry_delays: tuple[int, ...]
    batch_pages: int
    linger: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> StoreConfig:
        try:
            delays = tuple(int(d) for d in settings.getlist("HELPPUFF_RETRY_DELAYS"))
        except ValueError as exc:
            raise ValueError(f"HELPPUFF_RETRY_DELAYS must be whole seconds: {exc}") from exc
        if any(d <= 0 for d in delays):
            raise ValueError(f"HELPPUFF_RETRY_DELAYS must be positive seconds, got {list(delays)}")
        batch_pages = settings.getint("HELPPUFF_STORE_BATCH_PAGES")
        if batch_pages < 1:
            raise ValueError(f"HELPPUFF_STORE_BATCH_PAGES must be >= 1, got {batch_pages}")
        linger = settings.getfloat("HELPPUFF_STORE_LINGER")
        if linger <= 0:
            raise ValueError(f"HELPPUFF_STORE_LINGER must be > 0 seconds, got {linger}")
        return cls(delays, batch_pages, linger)


class StorePipeline:
    def __init__(self, crawler: Crawler, run: CrawlRun, embedding: Callable[[], EmbedPipeline | None]) -> None:
        """`embedding` gives, once the spider opens, the crawl's embed pipeline (whose embedder the work
        after the last page uses), or None when embedding is off."""
        if not crawler.settings.getbool("HELPPUFF_STORE_ENABLED"):
            raise NotConfigured("HELPPUFF_STORE_ENABLED is off")
        self.config = StoreConfig.from_settings(crawler.settings)
        self.crawler = crawler
        self.stats = crawler.stats
        self.run = run  # the site, its start URL, the run id and the crawl's start are the run's
        self.kb = run.kb
        self.writer = run.writer  # the crawl's one writer
        self._embedding = embedding
        self.embedding: EmbedPipeline | None = None
        self.facts = CrawlFacts()
        self.page_texts = CrawlPageTexts.from_settings(crawler.settings)  # footers, for facts from the pages
        self.queue: PageWriteQueue | None = None  # made at the first write, from the crawl's start
        self._waiting = 0  # items waiting here for their write
        self._leaving: list[str] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        run = crawler.get_extension(CrawlRun)
        if run is None:
            raise NotConfigured("the CrawlRun extension is off: pages have no run to be recorded in")
        return cls(crawler, run, lambda: crawler.get_item_pipeline(EmbedPipeline))

    def open_spider(self) -> None:
        self.embedding = self._embedding()

    # --- per page -----------------------------------------------------------------------

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        previous = self.run.start.known.pages.get(item.url)
        if item.status != "fetched":
            await self._save_row(self._row(item, previous, item.status))
            if (item.status in _LEAVE or item.duplicate_of) and previous and previous.get("content_hash"):
                self._leaving.append(item.url)
            return self._recorded(item, item.status)
        if not self.run.start.targeted or item.category in FACTS_FIRST:
            self.facts.add(item.category, item.url, item.facts, item.site_blocks)
            self.page_texts.add(item.category, item.url, item.html)
        elif item.facts:
            self.stats.inc_value("helppuff/targeted/facts_left")
        lesson: Lesson | None = item.lesson
        if lesson is None:
            row = self._row(item, previous, "ok")
            row["content_hash"] = ""  # learned properly by the next crawl that makes passages
            await self._save_row(row)
            self.stats.inc_value("helppuff/store/not_learned")
            return self._recorded(item, "ok")
        if not lesson.error and _unchanged(item, previous, lesson):
            await self._save_row(self._row(item, previous, "unchanged"))
            self.stats.inc_value("helppuff/store/unchanged")
            return self._recorded(item, "unchanged")
        try:
            if lesson.error:
                raise _NotEmbedded(lesson.error)
            missing = [row.id for row in lesson.todo if row.id not in lesson.vectors]
            if missing:
                raise _NotEmbedded(f"{len(missing)} passages have no vector")
            await self._write(PageWrite(item.url, lesson.rows, lesson.vectors,
                                        pages.page_row_statement(self._row(item, previous, "ok"))))
        except Exception as exc:
            why = str(exc) if isinstance(exc, _NotEmbedded) else f"{type(exc).__name__}: {exc}"
            item.reason = f"not stored: {why}".splitlines()[0][:300]
            # A Cloudflare error is one line with Cloudflare's code and message: its traceback tells nothing more.
            logger.error("Page %s %s", item.url, item.reason,
                         exc_info=not isinstance(exc, (_NotEmbedded, CloudflareError)),
                         extra={"spider": self.crawler.spider})
            row = self._row(item, previous, "failed")
            row["content_hash"] = ""  # redo it next time
            with contextlib.suppress(Exception):
                await self._save_row(row)
            return self._recorded(item, "failed")
        return self._recorded(item, "ok")

    async def _write(self, write: PageWrite) -> None:
        if self.queue is None:
            self.queue = PageWriteQueue(self.writer, self.run.config.site, self.run.start.known,
                                        self.config.batch_pages, self.config.linger,
                                        on_send=lambda pages: self.stats.inc_value("helppuff/store/sends"))
        self._waiting += 1
        # Once the write is queued (the queue's turn comes first): is it the last one to come?
        asyncio.get_running_loop().call_soon(self._send_if_drained)
        try:
            await self.queue.write(write)
        finally:
            self._waiting -= 1

    def _send_if_drained(self) -> None:
        if self.queue is not None and self._waiting and _drained(self.crawler, self._waiting):
            self.queue.send_queued()

    async def _save_row(self, row: dict[str, Any]) -> None:
        await self._write(PageWrite(row["url"], None, {}, pages.page_row_statement(row)))

    def _row(self, item: Page, previous: dict[str, Any] | None, status: str) -> dict[str, Any]:
        return pages.crawled_page_row(item, previous, status, self.run.run_id, self.config.retry_delays, utc_now())

    def _recorded(self, item: Page, status: str) -> Page:
        item.status = status
        item.lesson = None  # its vectors are written: the item need not carry them further
        self.stats.inc_value("helppuff/store/pages")
        self.stats.inc_value(f"helppuff/store/status/{status}")
        return item

    # --- after the last page ------------------------------------------------------------

    async def close_spider(self) -> None:
        if not self.run.started:  # refused before its first request: nothing was crawled, nothing to finish
            return
        start = self.run.start
        embed = self.embedding.embed if self.embedding is not None else None
        if self.queue is not None:
            await self.queue.flush()
        try:
            done = await after_crawl(self.kb, self.writer, embed,
                                     self.run.config.site, self.run.config.start_url, self.facts, self._leaving,
                                     relearn_all=start.relearn, targeted=bool(start.targeted),
                                     page_texts=self.page_texts)
            for key, value in vars(done).items():
                self.stats.set_value(f"helppuff/store/{key}", value)
        except Exception as exc:
            logger.error("Finishing the crawl failed: %s", exc, exc_info=not isinstance(exc, CloudflareError),
                         extra={"spider": self.crawler.spider})
            self.stats.set_value("helppuff/store/finish_error",
                                 f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
        finally:
            self.stats.set_value("helppuff/vectors/written", self.writer.vector_writes)
            self.stats.set_value("helppuff/vectors/deleted", self.writer.vector_deletes)
            await self._wait_for_vectors()

    async def _wait_for_vectors(self) -> None:
        """Wait for Vectorize to apply the crawl's writes; count those it has not applied yet."""
        try:
            await self.writer.wait_for_writes()
        except CloudflareError as exc:
            logger.warning("Could not see whether Vectorize applied the crawl's writes: %s", exc,
                           extra={"spider": self.crawler.spider})
        self.stats.set_value("helppuff/vectors/pending", len(self.writer.pending_ids))


def _drained(crawler: Crawler, waiting: int) -> bool:
    """Nothing more can reach the store: no request scheduled or in the downloader, the spider's start
    requests done, no response waiting to be parsed, and the responses in hand and the items in the
    pipelines are no more than the `waiting` pages (one item per response), each waiting for its write.
    False when the engine is not one this reads (another Scrapy): the queue's linger then decides."""
    engine = crawler.engine
    try:
        scraper = engine.scraper.slot  # type: ignore[union-attr]
        return bool(scraper is not None and not scraper.queue and len(scraper.active) <= waiting
                    and scraper.itemproc_size <= waiting and not engine.downloader.active  # type: ignore[union-attr]
                    and engine._start is None  # type: ignore[union-attr]
                    and engine._slot is not None  # type: ignore[union-attr]
                    and not engine._slot.scheduler.has_pending_requests())  # type: ignore[union-attr]
    except AttributeError:
        return False


class _NotEmbedded(Exception):
    """The embed pipeline could not give the page its vectors (the reason is its message)."""


def _unchanged(item: Page, previous: dict[str, Any] | None, lesson: Lesson) -> bool:
    """Same content as the page's last good crawl, and every passage still has its live vector."""
    return (previous is not None and previous["status"] in pages.LEARNED
            and bool(item.content_hash) and previous.get("content_hash") == item.content_hash
            and bool(lesson.rows) and not lesson.todo)
