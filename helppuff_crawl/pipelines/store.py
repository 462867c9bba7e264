"""Record the run and every page in the knowledge base (D1, local or on Cloudflare).

On open: runs left "running" by a dead process are marked failed, and this run's row is
created ("running", with a heartbeat refreshed every HELPPUFF_RUN_HEARTBEAT seconds). Each item
becomes one page row, written in one statement (never half a page). On close the run becomes
"done", or "failed" with the reason: the crawl was stopped, or the home page could not be
learned from and nothing else was.

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.store.StorePipeline": 900}.
Settings: HELPPUFF_STORE_ENABLED (True), HELPPUFF_DATA_DIR, HELPPUFF_D1_DATABASE, the Cloudflare
credentials, HELPPUFF_RETRY_DELAYS ([900, 7200]), HELPPUFF_RUN_STALE_AFTER (600),
HELPPUFF_RUN_HEARTBEAT (30). Stats: helppuff/store/{pages,unchanged}, helppuff/store/status/<status>.
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

from helppuff_crawl.items import Page
from helppuff_crawl.knowledge import BackendConfig, KnowledgeBase, iso, utc_now

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_LEARNED = ("ok", "unchanged")
_FAILED = ("failed", "blocked", "gone")


@dataclass(frozen=True)
class StoreConfig:
    site: str
    start_url: str
    retry_delays: tuple[int, ...]
    stale_after: float
    heartbeat: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> StoreConfig:
        site = settings.get("HELPPUFF_SITE") or ""
        if not site:
            raise ValueError("HELPPUFF_SITE is not set: run the 'site' spider (it sets it from its arguments)")
        delays = tuple(int(d) for d in settings.getlist("HELPPUFF_RETRY_DELAYS", [900, 7200]))
        if any(d <= 0 for d in delays):
            raise ValueError(f"HELPPUFF_RETRY_DELAYS must be positive seconds, got {list(delays)}")
        heartbeat = settings.getfloat("HELPPUFF_RUN_HEARTBEAT", 30.0)
        if heartbeat <= 0:
            raise ValueError(f"HELPPUFF_RUN_HEARTBEAT must be > 0 seconds, got {heartbeat}")
        return cls(
            site=site,
            start_url=settings.get("HELPPUFF_START_URL") or "",
            retry_delays=delays,
            stale_after=settings.getfloat("HELPPUFF_RUN_STALE_AFTER", 600.0),
            heartbeat=heartbeat,
        )


class StorePipeline:
    def __init__(self, crawler: Crawler, kb: KnowledgeBase) -> None:
        if not crawler.settings.getbool("HELPPUFF_STORE_ENABLED", True):
            raise NotConfigured("HELPPUFF_STORE_ENABLED is off")
        self.config = StoreConfig.from_settings(crawler.settings)
        self.crawler = crawler
        self.stats = crawler.stats
        self.kb = kb
        self.run_id = ""
        self.counts = {"pages_found": 0, "pages_ticked": 0, "pages_ok": 0, "pages_failed": 0}
        self.home: Page | None = None
        self._heartbeat: asyncio.Task[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        pipeline = cls(crawler, KnowledgeBase.open(BackendConfig.from_settings(crawler.settings)))
        # The close reason is known only at spider_closed (after the pipelines' close_spider).
        crawler.signals.connect(pipeline.spider_closed, signal=signals.spider_closed)
        return pipeline

    async def open_spider(self) -> None:
        await self.kb.reap_dead_runs(self.config.stale_after)
        self.run_id = await self.kb.start_run(self.config.site, self.config.start_url)
        self.stats.set_value("helppuff/run_id", self.run_id)
        logger.info("Crawl run %s of %s started", self.run_id, self.config.site)
        self._heartbeat = asyncio.ensure_future(self._beat())

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.config.heartbeat)
            try:
                await self.kb.heartbeat(self.run_id, self.counts)
            except Exception:
                logger.warning("Heartbeat for run %s failed", self.run_id, exc_info=True)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        previous = await self.kb.page(item.site, item.url)
        row = self._row(item, previous)
        await self.kb.save_page(row)
        item.status = row["status"]
        self._count(item)
        self.stats.inc_value("helppuff/store/pages")
        self.stats.inc_value(f"helppuff/store/status/{item.status}")
        if item.source == "start":
            self.home = item
        logger.debug("Stored %s: %s %s", item.url, item.status, item.reason, extra={"spider": self.crawler.spider})
        return item

    def _row(self, item: Page, previous: dict[str, Any] | None) -> dict[str, Any]:
        status = item.status
        if status == "fetched":
            status = "ok"
            if previous and previous.get("content_hash") == item.content_hash and previous["status"] in _LEARNED:
                status = "unchanged"
                self.stats.inc_value("helppuff/store/unchanged")
        retry_count = 0
        next_retry = None
        if status == "failed" or (status == "blocked" and item.http_status == 429):
            retry_count = int(previous["retry_count"]) + 1 if previous and previous["status"] == status else 1
            if retry_count <= len(self.config.retry_delays):
                delay = self.config.retry_delays[retry_count - 1]
                next_retry = iso(utc_now() + timedelta(seconds=delay))
        keep_markdown = status in _LEARNED
        return {
            "site": item.site,
            "url": item.url,
            "category": item.category,
            "ticked": 1 if item.ticked else 0,
            "tick_reason": item.tick_reason,
            "source": item.source,
            "status": status,
            "reason": item.reason,
            "http_status": item.http_status,
            "final_url": item.final_url,
            "redirects": item.redirects,
            "rendered": 1 if item.rendered else 0,
            "title": item.title or (previous or {}).get("title", ""),
            "description": item.description,
            "markdown": item.markdown if keep_markdown else (previous or {}).get("markdown", ""),
            "content_hash": item.content_hash if keep_markdown else (previous or {}).get("content_hash", ""),
            "fetched_at": item.fetched_at or None,
            "retry_count": retry_count,
            "next_retry_at": next_retry,
            "run_id": self.run_id,
        }

    def _count(self, item: Page) -> None:
        self.counts["pages_found"] += 1
        if item.ticked:
            self.counts["pages_ticked"] += 1
        if item.status in _LEARNED:
            self.counts["pages_ok"] += 1
        elif item.status in _FAILED:
            self.counts["pages_failed"] += 1

    async def spider_closed(self, spider: Any, reason: str) -> None:
        if not self.run_id:
            return
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
        status, why = "done", reason
        if reason != "finished":
            status, why = "failed", f"crawl stopped: {reason}"
        elif self.counts["pages_ok"] == 0 and self.home is not None and self.home.status not in _LEARNED:
            status, why = "failed", f"home page {self.home.status}: {self.home.reason}"
        elif self.counts["pages_found"] == 0:
            status, why = "failed", "nothing was found to crawl"
        stats = {k: v for k, v in self.stats.get_stats().items() if k.startswith(("helppuff/", "downloader/response_status"))}
        try:
            await self.kb.finish_run(self.run_id, status, why, self.counts, stats)
            logger.info("Crawl run %s %s: %s (%s)", self.run_id, status, why, self.counts)
        finally:
            await self.kb.close()
