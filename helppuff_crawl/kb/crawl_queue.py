"""The crawl queue: Cloudflare Queues with an HTTP pull consumer, or the local cloud's on this machine.

Found by name (HELPPUFF_QUEUE) in the state file, as the D1 database is. On Cloudflare, `helppuff
deploy` creates the queue, its dead-letter queue (HELPPUFF_QUEUE_DEAD_LETTER) and the pull consumer;
without them a command that needs the queue is one line naming `helppuff deploy`. The local cloud has no
account to deploy to: the queue and its consumer are made on first use, and recorded.

The consumer's settings: batch_size 1 (a crawl is long; a worker takes one job at a time),
visibility_timeout_ms HELPPUFF_QUEUE_VISIBILITY, and max_retries MAX_DELIVERIES - 1: deliveries, not
failed crawls. A job running longer than the visibility timeout is delivered again and put back while
its taker beats, and each of those counts; the job's own failures are counted on its row, which gives
it up after HELPPUFF_QUEUE_MAX_RETRIES (kb/jobs.py, `helppuff worker`). So the dead-letter queue only
receives what no worker could ever take (e.g. workers killed mid-job time after time).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from helppuff_crawl.clock import parse_iso, utc_now
from helppuff_crawl.cloudflare.client import CloudflareClient, CloudflareError
from helppuff_crawl.kb import jobs
from helppuff_crawl.kb.database import (
    DEPLOY_HINT,
    BackendConfig,
    KnowledgeBase,
    NotDeployed,
)
from helppuff_crawl.kb.jobs import Sender

logger = logging.getLogger(__name__)

QUEUE_EXISTS = 11009  # Queues' "a queue with this name already exists"
MAX_DELIVERIES = 20


@dataclass(frozen=True)
class QueueConfig:
    name: str
    dead_letter: str
    visibility: float  # seconds
    max_retries: int
    poll: float

    @classmethod
    def from_settings(cls, settings: Any) -> QueueConfig:
        name = str(settings.get("HELPPUFF_QUEUE") or "")
        dead = str(settings.get("HELPPUFF_QUEUE_DEAD_LETTER") or "")
        if not name or name == dead:
            raise ValueError("HELPPUFF_QUEUE must name the crawl queue, and HELPPUFF_QUEUE_DEAD_LETTER another queue")
        visibility = float(settings.get("HELPPUFF_QUEUE_VISIBILITY"))
        if not 1 <= visibility <= 12 * 3600:
            raise ValueError(f"HELPPUFF_QUEUE_VISIBILITY must be 1 to 43,200 seconds (12 hours), got {visibility}")
        retries = int(settings.get("HELPPUFF_QUEUE_MAX_RETRIES"))
        if not 0 <= retries <= 100:
            raise ValueError(f"HELPPUFF_QUEUE_MAX_RETRIES must be 0 to 100, got {retries}")
        poll = float(settings.get("HELPPUFF_QUEUE_POLL"))
        if poll <= 0:
            raise ValueError(f"HELPPUFF_QUEUE_POLL must be > 0 seconds, got {poll}")
        return cls(name, dead, visibility, retries, poll)

    def consumer_settings(self) -> dict[str, Any]:
        return consumer_settings(self.visibility)


def consumer_settings(visibility: float) -> dict[str, Any]:
    """The crawl queue's HTTP pull consumer (`visibility`: seconds)."""
    return {"batch_size": 1, "max_retries": MAX_DELIVERIES - 1, "visibility_timeout_ms": int(visibility * 1000)}


class CrawlQueue(Sender):
    """One queue, by id, through the project's client."""

    def __init__(self, client: CloudflareClient, queue_id: str, config: QueueConfig) -> None:
        self.client = client
        self.queue_id = queue_id
        self.config = config

    async def send(self, body: str, delay_seconds: float) -> None:
        await self.client.queue_send(self.queue_id, body, delay_seconds)

    async def pull(self, batch_size: int = 1) -> tuple[list[dict[str, Any]], int]:
        return await self.client.queue_pull(self.queue_id, batch_size, int(self.config.visibility * 1000))

    async def ack(self, lease_id: str) -> None:
        await self.client.queue_ack(self.queue_id, acks=[lease_id])

    async def retry(self, lease_id: str, delay_seconds: float) -> None:
        await self.client.queue_ack(self.queue_id, retries=[(lease_id, max(0.0, min(delay_seconds, 12 * 3600)))])


async def _find(client: CloudflareClient, name: str) -> Mapping[str, Any] | None:
    return next((q for q in await client.queues_list() if q.get("queue_name") == name), None)


async def ensure_queue(client: CloudflareClient, config: QueueConfig) -> tuple[str, list[str]]:
    """The crawl queue's id, with its dead-letter queue and pull consumer made when absent; and what was made."""
    made: list[str] = []
    for name in (config.dead_letter, config.name):
        if await _find(client, name) is None:
            try:
                await client.queue_create(name)
                made.append(f"queue {name}")
            except CloudflareError as exc:
                if QUEUE_EXISTS not in exc.codes:  # made meanwhile by another process
                    raise
    queue = await _find(client, config.name)
    if queue is None:
        raise CloudflareError(f"queue {config.name}", 200, [{"code": None, "message": "not listed after it was created"}])
    queue_id = str(queue["queue_id"])
    consumers = await client.queue_consumers(queue_id)
    if not any(c.get("type") == "http_pull" for c in consumers):
        if consumers:
            raise CloudflareError(f"queue {config.name}", 409, [{"code": None, "message": (
                "the queue has a Worker consumer; remove it (`wrangler queues consumer worker remove`) so that "
                "crawl containers can pull from it")}])
        try:
            await client.queue_create_pull_consumer(queue_id, config.consumer_settings(), config.dead_letter)
            made.append(f"HTTP pull consumer on {config.name}")
        except CloudflareError as exc:
            if exc.status != 409:
                raise
    return queue_id, made


async def open_queue(kb: KnowledgeBase, settings: Any) -> CrawlQueue:
    """The crawl queue of the knowledge base's backend (NotDeployed on Cloudflare before a deploy)."""
    config = QueueConfig.from_settings(settings)
    backend: BackendConfig | None = kb.config
    if backend is None:
        raise ValueError("the crawl queue is found through the backend's state file: open the knowledge base with one")
    recorded = backend.state.queue_id(backend.account, config.name)
    if recorded:
        return CrawlQueue(kb.client, recorded, config)
    if backend.remote:
        raise NotDeployed(f"queue {config.name} has no id in {backend.state.path}: {DEPLOY_HINT}")
    queue_id, _ = await ensure_queue(kb.client, config)
    backend.state.record_queue(backend.account, config.name, queue_id)
    return CrawlQueue(kb.client, queue_id, config)


async def queue_retries(kb: KnowledgeBase, settings: Any, site: str, run_id: str) -> dict[str, Any]:
    """After run `run_id`: its pages that failed for a passing reason become one delayed `retry` job;
    the job's stats ({} when there is none).

    Such a page (unreachable, timed out, 5xx, or blocked by HTTP 429) has its next retry time in its row
    (kb/pages.py: +15 min, then +2 h, HELPPUFF_RETRY_DELAYS); the run's pages that have one are asked for
    as one job (kb/jobs.py), due at the earliest of those times, merged with a job already waiting (a
    full crawl replaces it). A page out of tries has none, so a page that keeps failing is tried three
    times in all. The queue being unreachable never fails the crawl: the job waits unsent, and `helppuff
    worker` or `helppuff schedule` sends it. The CrawlRun extension calls this once the run is recorded,
    on the run's own client. Setting: HELPPUFF_QUEUE_RETRIES. Stats: helppuff/retry/{pages,request}."""
    if not settings.getbool("HELPPUFF_QUEUE_RETRIES"):
        return {}
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
