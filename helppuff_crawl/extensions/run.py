"""The crawl's run in D1 `crawl_runs`, on Scrapy's signals (as scrapy/extensions/corestats.py keeps
the core stats), the knowledge base the crawl's components record into, and the crawl's start.

    spider_opened  runs left "running" by a process that is gone are marked failed; this run's row is
                   created ("running") with a heartbeat every HELPPUFF_RUN_HEARTBEAT seconds; when
                   the row cannot be written the crawl closes at once (CloseSpider, with the reason);
                   then the crawl starts (kb/crawl_start.py open_crawl, with the crawl's one writer)
                   and `start` is published; a knowledge base that cannot take the crawl (another
                   model in the index, Cloudflare's refusal) closes it at once too, "knowledge base
                   refused: <why>"
    item_scraped   each page, as the store left it, is counted (found, ticked, learned, failed)
    spider_closed  the crawl's embedding use is priced and added to the day's usage; the run becomes
                   "done", or "failed" with the reason: the crawl stopped early, finishing failed
                   (the store's stat helppuff/store/finish_error), the home page could not be learned
                   and nothing was, or nothing was found; the knowledge-base client's calls go into the
                   stats (so into the run row too); then the knowledge base is closed

`start` (kb/crawl_start.CrawlStart) is set once, on spider_opened: after the item pipelines' open_spider
and before the spider's start() is iterated (Scrapy's order), so the spider reads it in start() and the
pipelines when their first item comes (process_item) or at close_spider, never in open_spider; read
before it is published, it raises. The spider takes the pages to fetch from it, the boilerplate pipeline
the stored furniture, the hash, embed and store pipelines what the site held; none writes back.

A targeted crawl (HELPPUFF_ONLY: the pages named, spider argument `only`) is a run like any other;
crawl_runs has no kind column, so its mode is in its stats (helppuff/targeted/pages: the pages named).
It need not fetch the home page, so its outcome is read from the pages named: "failed" when none of
them could be fetched (each failed or blocked), else "done" (a page now gone is a result: it leaves).
When the site's model or chunk sizes changed, the crawl start makes it a full one instead (the reason
is logged and is the stat helppuff/targeted/full_instead).

The knowledge base and the crawl's one KnowledgeWriter (its IndexConfig: HELPPUFF_VECTORIZE_INDEX,
HELPPUFF_EMBED_MODEL, HELPPUFF_CHUNK_MIN_TOKENS, HELPPUFF_CHUNK_MAX_TOKENS; HELPPUFF_VECTORIZE_WAIT) are
made when the crawler builds its extensions, before the item pipelines, which take them from here
(`crawler.get_extension(CrawlRun).kb`, `.writer`): one connection and one writer for the whole crawl.

Enable: EXTENSIONS {"helppuff_crawl.extensions.run.CrawlRun": 0}. Settings: HELPPUFF_RUN_ENABLED,
HELPPUFF_RUN_STALE_AFTER, HELPPUFF_RUN_HEARTBEAT, HELPPUFF_SITE, HELPPUFF_START_URL, HELPPUFF_ONLY,
HELPPUFF_STORE_ENABLED (off: the crawl's start only reads, kb/crawl_start.py), those of
the writer above, and those of the knowledge base (HELPPUFF_DATA_DIR, HELPPUFF_D1_DATABASE, the Cloudflare
credentials).
Stats: helppuff/run_id; helppuff/store/mended/<what> (what the crawl start mended after a killed crawl),
helppuff/targeted/full_instead; the Cloudflare API calls of the crawl (helppuff_crawl/cloudflare/pacing.py
CallCounts): helppuff/cloudflare/calls/{d1,vectorize,ai} (requests sent, retries included),
helppuff/cloudflare/calls (all), retries, rate_limited (429s waited out), retry_wait_seconds, paced (calls
the client's pacer held back), pace_wait_seconds, gave_up (calls that failed after their retries), under
helppuff/cloudflare/.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import CloseSpider, NotConfigured

from helppuff_crawl.cloudflare.client import CloudflareError
from helppuff_crawl.cloudflare.pricing import neurons
from helppuff_crawl.items import Page
from helppuff_crawl.kb import runs, usage
from helppuff_crawl.kb.crawl_queue import queue_retries
from helppuff_crawl.kb.crawl_start import CrawlStart, open_crawl
from helppuff_crawl.kb.database import BackendConfig, KnowledgeBase, NotDeployed
from helppuff_crawl.kb.pages import LEARNED
from helppuff_crawl.kb.site_index import ModelMismatch
from helppuff_crawl.kb.vector_mutations import vectorize_wait
from helppuff_crawl.kb.writer import IndexConfig, KnowledgeWriter

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

FAILED = ("failed", "blocked", "gone")  # counted as pages_failed
UNREACHED = ("failed", "blocked")  # a targeted crawl none of whose pages got further failed


@dataclass(frozen=True)
class RunConfig:
    site: str
    start_url: str
    stale_after: float
    heartbeat: float
    only: tuple[str, ...] = ()  # the pages a targeted crawl fetches (normalised, on the site); () for a full crawl
    store: bool = True  # HELPPUFF_STORE_ENABLED: off, the crawl's start only reads the knowledge base

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RunConfig:
        site = settings.get("HELPPUFF_SITE") or ""
        if not site:
            raise ValueError("HELPPUFF_SITE is not set: run the 'site' spider (it sets it from its arguments)")
        heartbeat = settings.getfloat("HELPPUFF_RUN_HEARTBEAT")
        if heartbeat <= 0:
            raise ValueError(f"HELPPUFF_RUN_HEARTBEAT must be > 0 seconds, got {heartbeat}")
        return cls(site, settings.get("HELPPUFF_START_URL") or "", settings.getfloat("HELPPUFF_RUN_STALE_AFTER"),
                   heartbeat, tuple(settings.getlist("HELPPUFF_ONLY")), settings.getbool("HELPPUFF_STORE_ENABLED"))


class CrawlRun:
    def __init__(self, crawler: Crawler, kb: KnowledgeBase) -> None:
        if not crawler.settings.getbool("HELPPUFF_RUN_ENABLED"):
            raise NotConfigured("HELPPUFF_RUN_ENABLED is off")
        self.config = RunConfig.from_settings(crawler.settings)
        self.crawler = crawler
        self.stats = crawler.stats
        self.kb = kb
        self.backend = kb.config or BackendConfig.from_settings(crawler.settings)  # where the knowledge base is
        # The crawl's one writer: the start, the embed pipeline's reuse check and the store's writes.
        self.writer = KnowledgeWriter(kb, IndexConfig.from_settings(crawler.settings, self.backend.remote),
                                      wait=vectorize_wait(crawler.settings))
        self.run_id = ""
        self.counts = {key: 0 for key in runs.RUN_COUNTS}
        self.home: Page | None = None
        self._start: CrawlStart | None = None
        self._unreached: list[str] = []  # "URL status: reason" of each page recorded failed or blocked
        self._heartbeat: asyncio.Task[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        run = cls(crawler, KnowledgeBase.from_settings(crawler.settings))
        crawler.signals.connect(run.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(run.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(run.spider_closed, signal=signals.spider_closed)
        return run

    async def spider_opened(self, spider: Any) -> None:
        try:
            await runs.reap_dead_runs(self.kb, self.config.stale_after)
            self.run_id = await runs.start_run(self.kb, self.config.site, self.config.start_url)
        except Exception as exc:
            # No run row, no crawl: pages must not be recorded outside a run. A refusal from outside
            # (no database deployed, Cloudflare's answer) is one line; anything else keeps its traceback.
            refusal = isinstance(exc, (NotDeployed, CloudflareError))
            logger.error("The run of %s could not start%s", self.config.site, f": {exc}" if refusal else "",
                         exc_info=not refusal, extra={"spider": spider})
            raise CloseSpider(f"the run could not start: {type(exc).__name__}: {exc}".splitlines()[0][:300]) from exc
        self.stats.set_value("helppuff/run_id", self.run_id)
        self._heartbeat = asyncio.ensure_future(self._beat())
        logger.info("Crawl run %s of %s started", self.run_id, self.config.site, extra={"spider": spider})
        await self._open_crawl(spider)

    async def _open_crawl(self, spider: Any) -> None:
        """The crawl's start, inside its run (pages are recorded in a run), published as `start`."""
        site = self.config.site
        try:
            start = await open_crawl(self.writer, site, self.config.only, self.config.store)
        except (ModelMismatch, CloudflareError) as exc:
            logger.error("The knowledge base of %s cannot take this crawl: %s", site, exc, extra={"spider": spider})
            raise CloseSpider(f"knowledge base refused: {exc}".splitlines()[0][:300]) from exc
        except Exception as exc:
            logger.error("The crawl of %s could not start", site, exc_info=True, extra={"spider": spider})
            raise CloseSpider(f"the crawl could not start: {type(exc).__name__}: {exc}".splitlines()[0][:300]) from exc
        for key, value in start.mended.items():
            if value:
                self.stats.set_value(f"helppuff/store/mended/{key}", value)
        if start.full_instead:
            logger.warning("Targeted crawl of %s (%d pages) done as a full crawl: %s", site, len(self.config.only),
                           start.full_instead, extra={"spider": spider})
            self.stats.set_value("helppuff/targeted/full_instead", start.full_instead)
        self._start = start

    @property
    def start(self) -> CrawlStart:
        """What the knowledge base held of the site as the crawl began, and what the crawl is."""
        if self._start is None:
            raise RuntimeError("CrawlRun.start is read before the crawl started: it is published on spider_opened, "
                               "after the run row (read it in start(), process_item or close_spider)")
        return self._start

    @property
    def started(self) -> bool:
        """Whether `start` is published (False when the run or the knowledge base refused the crawl)."""
        return self._start is not None

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.config.heartbeat)
            try:
                await runs.heartbeat(self.kb, self.run_id, self.counts)
            except Exception:
                logger.warning("Heartbeat for run %s failed", self.run_id, exc_info=True)

    def item_scraped(self, item: Any, spider: Any) -> None:
        if not isinstance(item, Page):
            return
        if item.source == "start":
            self.home = item
        self.counts["pages_found"] += 1
        if item.ticked:
            self.counts["pages_ticked"] += 1
        if item.status in LEARNED:
            self.counts["pages_ok"] += 1
        elif item.status in FAILED:
            self.counts["pages_failed"] += 1
        if item.status in UNREACHED:
            self._unreached.append(f"{item.url} {item.status}: {item.reason}")

    def outcome(self, reason: str) -> tuple[str, str]:
        """The run's status and reason once its last page is written."""
        finishing = self.stats.get_value("helppuff/store/finish_error")
        if reason == "shutdown":  # SIGTERM or Ctrl-C: the pages in hand were finished and recorded
            return "failed", "interrupted: stopped before its end (SIGTERM or Ctrl-C; shutdown)"
        if reason != "finished":
            return "failed", f"crawl stopped: {reason}"
        if finishing:
            return "failed", f"finishing failed: {finishing}"
        if self.start.targeted:
            if self.counts["pages_found"] == 0:
                return "failed", "nothing was recorded of the pages named"
            if len(self._unreached) == self.counts["pages_found"]:
                return "failed", f"no page named could be fetched: {self._unreached[0]}"[:300]
            return "done", reason
        if self.counts["pages_ok"] == 0 and self.home is not None and self.home.status not in LEARNED:
            return "failed", f"home page {self.home.status}: {self.home.reason}"
        if self.counts["pages_found"] == 0:
            return "failed", "nothing was found to crawl"
        return "done", reason

    async def _add_embedding_usage(self) -> None:
        calls = int(self.stats.get_value("helppuff/embed/calls", 0))
        model = self.stats.get_value("helppuff/embed/model")
        if not calls or not model:
            return
        tokens = int(self.stats.get_value("helppuff/embed/tokens", 0))
        await usage.add_usage(self.kb, f"{self.run_id}:embed", self.config.site, "embed", model, calls, tokens, 0,
                              neurons(model, tokens))

    def record_calls(self) -> None:
        """The client's Cloudflare API calls so far, into the stats."""
        counts = getattr(self.kb.client, "counts", None)
        if counts is None:
            return
        for key, value in counts.stats().items():
            self.stats.set_value(key, value)

    async def spider_closed(self, spider: Any, reason: str) -> None:
        try:
            if not self.run_id:
                return
            if self._heartbeat is not None:
                self._heartbeat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._heartbeat
            status, why = self.outcome(reason)
            try:
                await self._add_embedding_usage()
            except Exception as exc:
                logger.error("Recording the crawl's embedding use failed", exc_info=True, extra={"spider": spider})
                status, why = "failed", f"finishing failed: {type(exc).__name__}: {exc}".splitlines()[0][:300]
            self.record_calls()
            stats = {k: v for k, v in self.stats.get_stats().items()
                     if k.startswith(("helppuff/", "downloader/response_status"))}
            await runs.finish_run(self.kb, self.run_id, status, why, self.counts, stats)
            # The pages that failed for a passing reason: one delayed retry job (kb/crawl_queue.py).
            for key, value in (await queue_retries(self.kb, self.crawler.settings, self.config.site,
                                                   self.run_id)).items():
                self.stats.set_value(key, value)
            logger.info("Crawl run %s %s: %s (%s)", self.run_id, status, why, self.counts, extra={"spider": spider})
        finally:
            self.record_calls()  # again: the run row's own write counts too
            await self.kb.close()
