"""EmbeddingBatcher: batches fill across callers, calls in flight are bounded, late texts never wait.

The batching's concurrency (linger, an idle model sent a partial batch at once, slots, flush) is tested
once, in tests/test_batching.py."""

from __future__ import annotations

import asyncio

import pytest_twisted

from helppuff_crawl.embed.batcher import EmbeddingBatcher
from tests.conftest import run_async


class _RecordingEmbed:
    def __init__(self, fail_on: str = "") -> None:
        self.calls: list[list[str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.fail_on = fail_on

    async def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0.01)
        self.in_flight -= 1
        if self.fail_on and self.fail_on in texts:
            raise RuntimeError("429 Too Many Requests after 3 attempts")
        return [[float(len(t))] for t in texts]


async def _fill_across_pages() -> None:
    embed = _RecordingEmbed()
    batcher = EmbeddingBatcher(embed, batch_size=4, max_in_flight=2)
    pages = [[f"p{p}c{c}" for c in range(3)] for p in range(5)]  # 15 texts from 5 pages
    futures = [batcher.submit(texts) for texts in pages]
    await batcher.flush()
    assert [len(call) for call in embed.calls] == [4, 4, 4, 3]  # filled across pages
    assert embed.max_in_flight <= 2
    assert batcher.batches == 4
    results = [[f.result() for f in page] for page in futures]
    assert results[4] == [[4.0], [4.0], [4.0]]
    # After the flush a late page is sent at once, not left waiting for a full batch.
    late = batcher.submit(["late one"])
    assert await late[0] == [8.0]


async def _failure_reaches_only_its_batch() -> None:
    embed = _RecordingEmbed(fail_on="bad")
    batcher = EmbeddingBatcher(embed, batch_size=2)
    good = batcher.submit(["a", "b"])
    bad = batcher.submit(["bad", "c"])
    await batcher.flush()
    assert [f.result() for f in good] == [[1.0], [1.0]]
    for future in bad:
        assert "429" in str(future.exception())


@pytest_twisted.inlineCallbacks
def test_batches_fill_across_pages_and_late_texts_go_at_once():  # type: ignore[no-untyped-def]
    yield run_async(_fill_across_pages())


@pytest_twisted.inlineCallbacks
def test_a_failed_call_fails_only_its_texts():  # type: ignore[no-untyped-def]
    yield run_async(_failure_reaches_only_its_batch())
