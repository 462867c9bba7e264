"""Items gathered across callers and sent together, each caller told its own item's outcome.

`submit(items)` queues items and returns one future per item. A batch of `size` items is sent as soon
as that many are queued. A partial batch must not wait forever for items that will never come: once
no item has been submitted for `linger` seconds (the crawl has gone quiet, or its last pages are in),
what is queued is sent, when a send slot is free; while every slot is busy, items go on queueing and
fill the batch instead, which is sent as soon as a slot frees. `send_queued()` sends what is queued now.
`flush()` sends what is left and waits for every send; from then on, items are sent as they come.

At most `max_in_flight` sends run at once. With `send_when_idle`, a partial batch does not linger
while no send is in flight: items submitted then are sent at once, and what queued during a send goes
as soon as the last send in flight is answered (for a sender that costs per item, not per send, and
that nothing else keeps busy: waiting for a fuller batch is time it sits idle).

`send(items)` answers one result per item, in order; a result that is an exception fails that item
alone (a sender that can tell which item failed). A send that raises, or answers another number of
results, fails every item of its batch with that error, and the other batches carry on.

Used by the embedding batcher (embed/batcher.py: texts to vectors) and the page write queue
(kb/write_queue.py: page writes to the knowledge base).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

Send = Callable[[list[T]], Awaitable[Sequence["R | BaseException"]]]


class LingerBatcher(Generic[T, R]):
    def __init__(self, send: Send[T, R], size: int, linger: float, max_in_flight: int = 1,
                 send_when_idle: bool = False) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        if linger <= 0:
            raise ValueError(f"linger must be > 0 seconds, got {linger}")
        if max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self._send = send
        self.size = size
        self.linger = linger
        self._max_in_flight = max_in_flight
        self._send_when_idle = send_when_idle
        self._slots = asyncio.Semaphore(max_in_flight)
        self._queue: list[tuple[T, asyncio.Future[R]]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._draining = False
        self._overdue = False  # the queue went quiet while every slot was busy
        self._in_flight = 0

    def submit(self, items: Sequence[T]) -> list[asyncio.Future[R]]:
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[R]] = [loop.create_future() for _ in items]
        self._queue.extend(zip(items, futures, strict=True))
        while len(self._queue) >= self.size or (self._draining and self._queue):
            self._send_next()
        if self._idle():
            self._send_next()
        self._restart_timer(loop)
        return futures

    def send_queued(self) -> None:
        """Send what is queued now, without waiting for the linger (later items queue as before)."""
        self._cancel_timer()
        while self._queue:
            self._send_next()

    async def flush(self) -> None:
        """Send what is queued, then wait until every send is answered; later items go at once."""
        self._draining = True
        self.send_queued()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _restart_timer(self, loop: asyncio.AbstractEventLoop) -> None:
        self._cancel_timer()
        if self._queue:
            self._timer = loop.call_later(self.linger, self._quiet)

    def _quiet(self) -> None:
        """No item for `linger` seconds: send the partial batch now, or as soon as a slot frees."""
        self._timer = None
        if not self._queue:
            return
        if self._in_flight >= self._max_in_flight:
            self._overdue = True
            return
        self._send_next()

    def _idle(self) -> bool:
        """Items wait, and no send is in flight to fill a batch behind (send_when_idle only)."""
        return self._send_when_idle and self._in_flight == 0 and bool(self._queue)

    def _send_next(self) -> None:
        batch = self._queue[: self.size]
        del self._queue[: self.size]
        self._in_flight += 1
        task = asyncio.ensure_future(self._run(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        items = [item for item, _ in batch]
        try:
            async with self._slots:
                try:
                    results = list(await self._send(items))
                    if len(results) != len(items):
                        raise ValueError(f"{len(items)} items gave {len(results)} results")
                except Exception as exc:  # handed to every caller waiting on this batch
                    results = [exc] * len(items)
            for (_, future), result in zip(batch, results, strict=True):
                if future.done():
                    continue
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)
        finally:
            self._in_flight -= 1
            if self._overdue and self._queue:
                self._overdue = False
                self._send_next()
            elif self._idle():
                self._send_next()
