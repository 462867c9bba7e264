"""After a crawl: its pages that failed for a passing reason become one delayed `retry` crawl job.

A page that failed (unreachable, timed out, 5xx, or blocked by HTTP 429) has its next retry time in its
row (kb/pages.py: +15 min, then +2 h, HELPPUFF_RETRY_DELAYS); once the crawl's pages are written, the
pages of this run that have one are asked for as one `retry` job (kb/jobs.py), due at the earliest of
those times. It merges with a job already waiting for the site (a full crawl replaces it), and a
`helppuff worker` runs it: those pages only. A page out of tries has no retry time, so a page that
keeps failing is tried three times in all. The queue being unreachable never fails the crawl: the job
waits unsent, and `helppuff worker` or `helppuff schedule` sends it.

Enable: EXTENSIONS {"helppuff_crawl.extensions.retry_jobs.RetryJobs": 5}; HELPPUFF_QUEUE_RETRIES (True).
Stats: helppuff/retry/{pages,request}.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured

from helppuff_crawl.clock import parse_iso, utc_now
from helppuff_crawl.extensions.run import CrawlRun

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class RetryJobs:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HELPPUFF_QUEUE_RETRIES") or not crawler.settings.getbool("HELPPUFF_STORE_ENABLED"):
            raise NotConfigured("HELPPUFF_QUEUE_RETRIES or HELPPUFF_STORE_ENABLED is off")
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    async def spider_closed(self, spider: Any, reason: str) -> None:
        run = self.crawler.get_extension(CrawlRun)
        if run is None or not run.run_id:
            return
        from helppuff_crawl.kb import jobs
        from helppuff_crawl.kb.crawl_queue import open_queue
        from helppuff_crawl.kb.database import KnowledgeBase

        site = run.config.site
        try:
            async with KnowledgeBase.from_settings(self.crawler.settings) as kb:
                urls, due = await jobs.retry_pages(kb, site, run.run_id)
                if not urls or due is None:
                    return
                delay = (parse_iso(due) - utc_now()).total_seconds()
                sender = None
                try:
                    sender = await open_queue(kb, self.crawler.settings)
                except (ValueError, OSError) as exc:  # no queue deployed: the job waits unsent
                    logger.warning("The crawl queue cannot be opened (%s): the retry job of %s waits unsent", exc, site)
                asked = await jobs.ask(kb, sender, site, "retry", urls,
                                       f"retry: {len(urls)} page{'s' if len(urls) != 1 else ''} failed in run {run.run_id}",
                                       delay)
        except Exception as exc:  # the crawl is done either way; its failed pages keep their retry times
            logger.error("The retry job of %s could not be asked for: %s", site, exc, extra={"spider": spider})
            return
        self.crawler.stats.set_value("helppuff/retry/pages", len(urls))
        self.crawler.stats.set_value("helppuff/retry/request", asked.job.request)
        logger.info("%d failed pages of %s: retry job %s, due %s%s", len(urls), site, asked.job.request,
                    asked.job.not_before, "" if asked.sent else f" (not sent: {asked.send_error or 'queued already'})",
                    extra={"spider": spider})
