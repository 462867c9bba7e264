"""Page writes gathered across a crawl's pages, so that many pages cost the REST calls of one.

`await queue.write(page_write)` returns once the page is in the knowledge base (or raises why it is
not). Writes wait in the queue until `max_pages` are queued, or until no write came for `linger`
seconds (the crawl went quiet, or its last pages are in), or `send_queued()` is called (the crawl
knows nothing more will come), then go together through `KnowledgeWriter.write_pages`, one send at a time. When a shared send fails, each of its pages is
sent again on its own, so that one bad page fails alone and the others are written. `flush()` sends
what is left and waits; from then on, writes go at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from helppuff_crawl.kb.writer import KnowledgeWriter, KnownSite, PageWrite

logger = logging.getLogger(__name__)


class PageWriteQueue:
    def __init__(self, writer: KnowledgeWriter, site: str, known: KnownSite | None, max_pages: int,
                 linger: float, on_send: Callable[[int], None] | None = None) -> None:
        if max_pages < 1:
            raise ValueError(f"max_pages must be >= 1, got {max_pages}")
        if linger <= 0:
            raise ValueError(f"linger must be > 0 seconds, got {linger}")
        self.writer = writer
        self.site = site
        self.known = known
        self.max_pages = max_pages
        self.linger = linger
        self._on_send = on_send
        self._queue: list[tuple[PageWrite, asyncio.Future[None]]] = []
        self._lock = asyncio.Lock()  # one send at a time: each sees the site as the last one left it
        self._tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._draining = False
        self.sends = 0

    async def write(self, write: PageWrite) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._queue.append((write, future))
        if len(self._queue) >= self.max_pages or self._draining:
            self._send_queued()
        else:
            self._restart_timer(loop)
        await future

    def _restart_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(self.linger, self._send_queued)

    def send_queued(self) -> None:
        """Send what is queued now, without waiting for the linger (later writes queue as before)."""
        self._send_queued()

    def _send_queued(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._queue:
            return
        batch, self._queue = self._queue, []
        task = asyncio.ensure_future(self._send(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: list[tuple[PageWrite, asyncio.Future[None]]]) -> None:
        async with self._lock:
            try:
                await self._write([write for write, _ in batch])
            except Exception as exc:
                if len(batch) == 1:
                    _settle(batch[0][1], exc)
                    return
                logger.warning("A write of %d pages of %s failed (%s: %s); writing them one by one", len(batch),
                               self.site, type(exc).__name__, exc)
                for write, future in batch:
                    try:
                        await self._write([write])
                    except Exception as one:  # this page fails alone, with its reason
                        _settle(future, one)
                    else:
                        _settle(future, None)
                return
            for _, future in batch:
                _settle(future, None)

    async def _write(self, writes: list[PageWrite]) -> None:
        await self.writer.write_pages(self.site, writes, self.known)
        self.sends += 1
        if self._on_send is not None:
            self._on_send(len(writes))

    async def flush(self) -> None:
        """Send what is queued and wait for every send; later writes go at once."""
        self._draining = True
        self._send_queued()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


def _settle(future: asyncio.Future[None], error: BaseException | None) -> None:
    if future.done():
        return
    if error is None:
        future.set_result(None)
    else:
        future.set_exception(error)
