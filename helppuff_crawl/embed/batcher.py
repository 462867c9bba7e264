"""Fill embedding batches across pages, with a bounded number of calls in flight.

`submit(texts)` queues texts and returns one future per text; a batch is sent as soon as it is full.
Pages wait for their vectors, so a partial batch must not wait forever for texts that will never
come: once no text has been submitted for `linger` seconds (the crawl has gone quiet, or its last
pages are in), what is queued is sent as it is, when a call slot is free (while every slot is busy,
texts go on queueing and fill the batch instead). `flush()` sends what is left and waits for every
call; from then on, texts are sent as soon as they are submitted.

With `send_when_idle`, a partial batch does not linger while no call is in flight: texts submitted
then are sent at once, and what queued during a call is sent as soon as the last call in flight is
answered. The texts that come while a call runs still fill the next batch. That is for a model whose
cost is per text, not per call, and that nothing else keeps busy (the local cloud's, which runs one
call at a time: waiting a second for a fuller batch is a second of the model idle, and a batch of one
costs the same per text as a batch of 32 and gives the same vectors). A remote model's calls are
requests within an account's rate limit, so there a partial batch lingers.

A failed call fails the futures of its texts with the error (after the client's own retries), so
each page that waits on them fails with the reason, and the others carry on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from helppuff_crawl.embed.models import EmbedFn

logger = logging.getLogger(__name__)


class EmbeddingBatcher:
    def __init__(self, embed: EmbedFn, batch_size: int, max_in_flight: int = 2, linger: float = 1.0,
                 on_batch: Callable[[list[str]], None] | None = None, send_when_idle: bool = False) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        if linger <= 0:
            raise ValueError(f"linger must be > 0 seconds, got {linger}")
        self._embed = embed
        self.batch_size = batch_size
        self.linger = linger
        self._max_in_flight = max_in_flight
        self._slots = asyncio.Semaphore(max_in_flight)
        self._queue: list[tuple[str, asyncio.Future[list[float]]]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._on_batch = on_batch
        self._send_when_idle = send_when_idle
        self._draining = False
        self._timer: asyncio.TimerHandle | None = None
        self._overdue = False  # the queue went quiet while every slot was busy
        self._in_flight = 0
        self.batches = 0

    def submit(self, texts: Sequence[str]) -> list[asyncio.Future[list[float]]]:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in texts]
        self._queue.extend(zip(texts, futures, strict=True))
        while len(self._queue) >= self.batch_size or (self._draining and self._queue):
            self._send_next()
        if self._idle():
            self._send_next()
        self._restart_timer(loop)
        return futures

    def _restart_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._queue:
            self._timer = loop.call_later(self.linger, self._quiet)

    def _quiet(self) -> None:
        """No text for `linger` seconds: send the partial batch now, or as soon as a slot frees."""
        self._timer = None
        if not self._queue:
            return
        if self._in_flight >= self._max_in_flight:
            self._overdue = True
            return
        self._send_next()

    def _idle(self) -> bool:
        """Texts wait, and no call is in flight to fill a batch behind (send_when_idle only)."""
        return self._send_when_idle and self._in_flight == 0 and bool(self._queue)

    def _send_next(self) -> None:
        batch = self._queue[: self.batch_size]
        del self._queue[: self.batch_size]
        self._in_flight += 1
        task = asyncio.ensure_future(self._run(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, batch: list[tuple[str, asyncio.Future[list[float]]]]) -> None:
        texts = [text for text, _ in batch]
        try:
            async with self._slots:
                try:
                    vectors = await self._embed(texts)
                    if len(vectors) != len(texts):
                        raise ValueError(f"{len(texts)} texts gave {len(vectors)} vectors")
                except Exception as exc:  # handed to every page waiting on this batch
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    return
            self.batches += 1
            if self._on_batch is not None:
                self._on_batch(texts)
            for (_, future), vector in zip(batch, vectors, strict=True):
                if not future.done():
                    future.set_result(vector)
        finally:
            self._in_flight -= 1
            if self._overdue and self._queue:
                self._overdue = False
                self._send_next()
            elif self._idle():
                self._send_next()

    async def flush(self) -> None:
        """Send the partial batch, then wait until every call is answered; later texts go at once."""
        self._draining = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._queue:
            self._send_next()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
