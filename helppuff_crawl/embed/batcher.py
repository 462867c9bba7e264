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
each page that waits on them fails with the reason, and the others carry on. The batching itself
(linger, slots, flush) is helppuff_crawl/batching.py's, shared with the page write queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from helppuff_crawl.batching import LingerBatcher
from helppuff_crawl.embed.models import EmbedFn


class EmbeddingBatcher:
    def __init__(self, embed: EmbedFn, batch_size: int, max_in_flight: int = 2, linger: float = 1.0,
                 on_batch: Callable[[list[str]], None] | None = None, send_when_idle: bool = False) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._embed = embed
        self._on_batch = on_batch
        self.batches = 0
        self._batcher: LingerBatcher[str, list[float]] = LingerBatcher(
            self._send, batch_size, linger, max_in_flight=max_in_flight, send_when_idle=send_when_idle)

    def submit(self, texts: Sequence[str]) -> list[asyncio.Future[list[float]]]:
        return self._batcher.submit(texts)

    async def flush(self) -> None:
        """Send the partial batch, then wait until every call is answered; later texts go at once."""
        await self._batcher.flush()

    async def _send(self, texts: list[str]) -> list[list[float]]:
        vectors = await self._embed(texts)
        if len(vectors) != len(texts):
            raise ValueError(f"{len(texts)} texts gave {len(vectors)} vectors")
        self.batches += 1
        if self._on_batch is not None:
            self._on_batch(texts)
        return vectors
