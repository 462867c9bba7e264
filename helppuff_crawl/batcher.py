"""Fill embedding batches across pages, with a bounded number of calls in flight.

`submit(texts)` queues texts and returns one future per text; a batch is sent as soon as it is
full, and `flush()` sends what is left (at the end of the crawl) and waits for every call; from
then on, texts are sent as soon as they are submitted (a page still on its way to the batcher
at the end must not wait for a batch that will never fill). A
failed call fails the futures of its texts with the error (after the client's own retries), so
each page that waits on them fails with the reason, and the others carry on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

logger = logging.getLogger(__name__)

EmbedFn = Callable[[list[str]], Awaitable[list[list[float]]]]


class EmbeddingBatcher:
    def __init__(self, embed: EmbedFn, batch_size: int, max_in_flight: int = 2,
                 on_batch: Callable[[list[str]], None] | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self._embed = embed
        self.batch_size = batch_size
        self._slots = asyncio.Semaphore(max_in_flight)
        self._queue: list[tuple[str, asyncio.Future[list[float]]]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._on_batch = on_batch
        self._draining = False
        self.batches = 0

    def submit(self, texts: Sequence[str]) -> list[asyncio.Future[list[float]]]:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in texts]
        self._queue.extend(zip(texts, futures, strict=True))
        while len(self._queue) >= self.batch_size or (self._draining and self._queue):
            self._send(self._queue[: self.batch_size])
            del self._queue[: self.batch_size]
        return futures

    def _send(self, batch: list[tuple[str, asyncio.Future[list[float]]]]) -> None:
        task = asyncio.ensure_future(self._run(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, batch: list[tuple[str, asyncio.Future[list[float]]]]) -> None:
        texts = [text for text, _ in batch]
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

    async def flush(self) -> None:
        """Send the partial batch, then wait until every call is answered; later texts go at once."""
        self._draining = True
        if self._queue:
            self._send(self._queue)
            self._queue = []
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
