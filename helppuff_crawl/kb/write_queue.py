"""Page writes gathered across a crawl's pages, so that many pages cost the REST calls of one.

`await queue.write(page_write)` returns once the page is in the knowledge base (or raises why it is
not). Writes wait in the queue until `max_pages` are queued, or until no write came for `linger`
seconds (the crawl went quiet, or its last pages are in), or `send_queued()` is called (the crawl
knows nothing more will come), then go together through `KnowledgeWriter.write_pages`, one send at a
time (each sees the site as the last one left it; a send that comes due while another runs waits
for it, and takes the writes queued meanwhile too). When a shared send fails, each of its pages is
sent again on its own, so that one bad page fails alone and the others are written. `flush()` sends
what is left and waits; from then on, writes go at once. The batching itself (linger, one send at a
time, flush) is helppuff_crawl/batching.py's, shared with the embedding batcher.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from helppuff_crawl.batching import LingerBatcher
from helppuff_crawl.kb.writer import KnowledgeWriter, KnownSite, PageWrite

logger = logging.getLogger(__name__)


class PageWriteQueue:
    def __init__(self, writer: KnowledgeWriter, site: str, known: KnownSite | None, max_pages: int,
                 linger: float, on_send: Callable[[int], None] | None = None) -> None:
        if max_pages < 1:
            raise ValueError(f"max_pages must be >= 1, got {max_pages}")
        self.writer = writer
        self.site = site
        self.known = known
        self._on_send = on_send
        self.sends = 0
        self._batcher: LingerBatcher[PageWrite, None] = LingerBatcher(self._send, max_pages, linger)

    async def write(self, write: PageWrite) -> None:
        await self._batcher.submit([write])[0]

    def send_queued(self) -> None:
        """Send what is queued now, without waiting for the linger (later writes queue as before)."""
        self._batcher.send_queued()

    async def flush(self) -> None:
        """Send what is queued and wait for every send; later writes go at once."""
        await self._batcher.flush()

    async def _send(self, writes: list[PageWrite]) -> list[None | BaseException]:
        try:
            await self._write(writes)
        except Exception as exc:
            if len(writes) == 1:
                raise
            logger.warning("A write of %d pages of %s failed (%s: %s); writing them one by one", len(writes),
                           self.site, type(exc).__name__, exc)
            outcomes: list[None | BaseException] = []
            for write in writes:
                try:
                    await self._write([write])
                except Exception as one:  # this page fails alone, with its reason
                    outcomes.append(one)
                else:
                    outcomes.append(None)
            return outcomes
        return [None] * len(writes)

    async def _write(self, writes: list[PageWrite]) -> None:
        await self.writer.write_pages(self.site, writes, self.known)
        self.sends += 1
        if self._on_send is not None:
            self._on_send(len(writes))
