"""After a crawl: its pages that failed for a passing reason become one delayed `retry` crawl job.

A page that failed (unreachable, timed out, 5xx, or blocked by HTTP 429) has its next retry time in its
row (kb/pages.py: +15 min, then +2 h, HELPPUFF_RETRY_DELAYS); once the crawl's pages are written, the
pages of this run that have one are asked for as one `retry` job (kb/jobs.py), due at the earliest of
those times. It merges with a job already waiting for the site (a full crawl replaces it), and a
`helppuff worker` runs it: those pages only. A page out of tries has no retry time, so a page that
keeps failing is tried three times in all. The queue being unreachable never fails the crawl: the job
waits unsent, and `helppuff worker` or `helppuff schedule` sends it.

The CrawlRun extension calls `queue_retries` once the run is recorded, on the run's own client.
Setting: HELPPUFF_QUEUE_RETRIES (True). Stats: helppuff/retry/{pages,request}.
"""

from __future__ import annotations

import logging
from typing import Any

from helppuff_crawl.clock import parse_iso, utc_now
from helppuff_crawl.kb.database import KnowledgeBase

logger = logging.getLogger(__name__)


async def queue_retries(kb: KnowledgeBase, settings: Any, site: str, run_id: str) -> dict[str, Any]:
    """Ask for the retry job of run `run_id`'s failed pages, if any; its stats ({} when none)."""
    if not settings.getbool("HELPPUFF_QUEUE_RETRIES"):
        return {}
    from helppuff_crawl.kb import jobs
    from helppuff_crawl.kb.crawl_queue import open_queue

    try:
        urls, due = await jobs.retry_pages(kb, site, run_id)
        if not urls or due is None:
            return {}
        now = utc_now()
        sender = None
        try:
            sender = await open_queue(kb, settings)
        except (ValueError, OSError) as exc:  # no queue deployed: the job waits unsent
            logger.warning("The crawl queue cannot be opened (%s): the retry job of %s waits unsent", exc, site)
        asked = await jobs.ask(kb, sender, site, "retry", urls,
                               f"retry: {len(urls)} page{'s' if len(urls) != 1 else ''} failed in run {run_id}",
                               (parse_iso(due) - now).total_seconds(), now=now)
    except Exception as exc:  # the crawl is done either way; its failed pages keep their retry times
        logger.error("The retry job of %s could not be asked for: %s", site, exc)
        return {}
    logger.info("%d failed pages of %s: retry job %s, due %s%s", len(urls), site, asked.job.request,
                asked.job.not_before, "" if asked.sent else f" (not sent: {asked.send_error or 'queued already'})")
    return {"helppuff/retry/pages": len(urls), "helppuff/retry/request": asked.job.request}
