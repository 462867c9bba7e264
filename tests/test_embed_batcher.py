"""EmbeddingBatcher: batches fill across callers, calls in flight are bounded, late texts never wait."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

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


class _GatedEmbed:
    """An embedding call that is answered only when the test opens its gate: which call is in flight,
    and what waits, is then the test's to see."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.gates: list[asyncio.Event] = []

    async def __call__(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        gate = asyncio.Event()
        self.gates.append(gate)
        await gate.wait()
        return [[float(len(t))] for t in texts]


async def _until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0)


async def _idle_model_gets_texts_at_once() -> list[list[str]]:
    embed = _GatedEmbed()
    # A linger no test waits out: whatever is sent before the flush was sent for being idle.
    batcher = EmbeddingBatcher(embed, batch_size=4, max_in_flight=2, linger=600.0, send_when_idle=True)
    first = batcher.submit(["first page"])
    for _ in range(5):
        await asyncio.sleep(0)
    await _until(lambda: len(embed.calls) == 1)
    assert embed.calls == [["first page"]]  # sent at once: no call was in flight
    # While that call runs, the next pages' texts fill the next batch instead of going one by one.
    later = batcher.submit(["second page"]) + batcher.submit(["third", "page"])
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(embed.calls) == 1
    embed.gates[0].set()
    assert await first[0] == [10.0]
    # The last call in flight is answered: what queued meanwhile goes at once, not after the linger.
    await _until(lambda: len(embed.calls) == 2)
    assert embed.calls[1] == ["second page", "third", "page"]
    embed.gates[1].set()
    assert [await f for f in later] == [[11.0], [5.0], [4.0]]
    return embed.calls


@pytest_twisted.inlineCallbacks
def test_an_idle_model_is_sent_a_partial_batch_at_once():  # type: ignore[no-untyped-def]
    calls = yield run_async(asyncio.wait_for(_idle_model_gets_texts_at_once(), 30))
    assert [len(call) for call in calls] == [1, 3]


async def _flushed_lingering() -> list[list[str]]:
    embed = _GatedEmbed()
    batcher = EmbeddingBatcher(embed, batch_size=4, linger=600.0)
    future = batcher.submit(["only page"])
    for _ in range(5):
        await asyncio.sleep(0)
    assert embed.calls == []  # without send_when_idle a partial batch lingers (a remote model's calls are requests)
    flushing = asyncio.ensure_future(batcher.flush())
    await _until(lambda: len(embed.calls) == 1)
    embed.gates[0].set()
    await flushing
    assert await future[0] == [9.0]
    return embed.calls


@pytest_twisted.inlineCallbacks
def test_without_send_when_idle_a_partial_batch_lingers():  # type: ignore[no-untyped-def]
    calls = yield run_async(asyncio.wait_for(_flushed_lingering(), 30))
    assert calls == [["only page"]]
