"""LingerBatcher: items gathered across callers, sent together, each caller told its own outcome.

The one place the batching's concurrency is tested (the embedding batcher and the page write queue
are built on it): batches fill across callers, a partial batch goes after the linger (or at once to an
idle sender), sends in flight are bounded, a failed send fails only its batch and an item's own
failure only that item, and a flush sends what is in hand and waits for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import pytest_twisted

from helppuff_crawl.batching import LingerBatcher
from tests.conftest import run_async


class _GatedSend:
    """A send answered only when the test opens its gate: what is in flight, and what waits, is the
    test's to see. Answers each item's length; an item named in `fail` is that item's own failure."""

    def __init__(self, fail: str = "", raises: str = "") -> None:
        self.calls: list[list[str]] = []
        self.gates: list[asyncio.Event] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.fail = fail
        self.raises = raises
        self.open = False  # every gate opens at once

    async def __call__(self, items: list[str]) -> list[int | BaseException]:
        self.calls.append(list(items))
        gate = asyncio.Event()
        self.gates.append(gate)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if not self.open:
                await gate.wait()
        finally:
            self.in_flight -= 1
        if self.raises and self.raises in items:
            raise RuntimeError("429 Too Many Requests after 3 attempts")
        return [ValueError(f"{item} refused") if item == self.fail else len(item) for item in items]


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def _fills_across_callers() -> None:
    send = _GatedSend()
    send.open = True
    batcher: LingerBatcher[str, int] = LingerBatcher(send, size=4, linger=600.0, max_in_flight=2)
    pages = [[f"p{p}c{c}" for c in range(3)] for p in range(5)]  # 15 items from 5 callers
    futures = [batcher.submit(items) for items in pages]
    await _settle()
    assert [len(call) for call in send.calls] == [4, 4, 4]  # full batches go at once; 3 linger
    await batcher.flush()
    assert [len(call) for call in send.calls] == [4, 4, 4, 3]
    assert send.most_in_flight <= 2
    assert [[f.result() for f in page] for page in futures][4] == [4, 4, 4]
    late = batcher.submit(["late one"])  # after the flush: sent at once, not left to linger
    assert await late[0] == 8


async def _bounded_in_flight() -> None:
    send = _GatedSend()
    batcher: LingerBatcher[str, int] = LingerBatcher(send, size=1, linger=600.0, max_in_flight=2)
    futures = batcher.submit(["a", "bb", "ccc", "dddd"])
    await _until(lambda: len(send.calls) == 2)
    await _settle()
    assert send.calls == [["a"], ["bb"]] and send.in_flight == 2  # the other two wait for a slot
    send.gates[0].set()
    await _until(lambda: len(send.calls) == 3)
    send.open = True
    for gate in send.gates:
        gate.set()
    assert [await f for f in futures] == [1, 2, 3, 4]
    assert send.most_in_flight == 2


async def _lingers_then_goes() -> None:
    send = _GatedSend()
    send.open = True
    batcher: LingerBatcher[str, int] = LingerBatcher(send, size=10, linger=0.05)
    first = batcher.submit(["one"])
    await asyncio.sleep(0.03)
    second = batcher.submit(["two", "three"])  # before the linger ends: it starts again
    await asyncio.sleep(0.03)
    assert send.calls == []
    assert [await f for f in first + second] == [3, 3, 5]
    assert send.calls == [["one", "two", "three"]]  # one send, after the quiet


async def _quiet_while_busy_keeps_filling() -> None:
    send = _GatedSend()
    batcher: LingerBatcher[str, int] = LingerBatcher(send, size=3, linger=0.02)
    busy = batcher.submit(["a", "b", "c"])  # a full batch: the one slot is busy with it
    await _until(lambda: len(send.calls) == 1)
    later = batcher.submit(["d"])
    await asyncio.sleep(0.05)  # the linger passes while the slot is busy: nothing is sent yet
    later += batcher.submit(["e"])
    assert len(send.calls) == 1
    send.open = True
    send.gates[0].set()
    assert [await f for f in busy + later] == [1, 1, 1, 1, 1]
    assert send.calls == [["a", "b", "c"], ["d", "e"]]  # sent when the slot freed, with what came meanwhile


async def _idle_sender_gets_items_at_once() -> None:
    send = _GatedSend()
    batcher: LingerBatcher[str, int] = LingerBatcher(send, size=4, linger=600.0, max_in_flight=2, send_when_idle=True)
    first = batcher.submit(["first page"])
    await _until(lambda: len(send.calls) == 1)
    later = batcher.submit(["second page"]) + batcher.submit(["third", "page"])
    await _settle()
    assert len(send.calls) == 1  # a send is in flight: the next batch fills behind it
    send.gates[0].set()
    assert await first[0] == 10
    await _until(lambda: len(send.calls) == 2)
    assert send.calls[1] == ["second page", "third", "page"]
    send.gates[1].set()
    assert [await f for f in later] == [11, 5, 4]


async def _failures() -> None:
    send = _GatedSend(fail="refused", raises="boom")
    send.open = True
    batcher: LingerBatcher[str, int] = LingerBatcher(send, size=2, linger=600.0)
    good = batcher.submit(["a", "bb"])
    own = batcher.submit(["refused", "ccc"])  # one item's own failure: that item alone
    raised = batcher.submit(["boom", "dd"])  # the send raises: its whole batch, and only it
    await batcher.flush()
    assert [f.result() for f in good] == [1, 2]
    assert "refused refused" in str(own[0].exception()) and own[1].result() == 3
    assert all("429" in str(f.exception()) for f in raised)


async def _wrong_count_fails_the_batch() -> None:
    async def short(items: list[str]) -> list[int]:
        return [1]

    batcher: LingerBatcher[str, int] = LingerBatcher(short, size=2, linger=600.0)
    futures = batcher.submit(["a", "b"])
    await batcher.flush()
    assert all("2 items gave 1 results" in str(f.exception()) for f in futures)


async def _flush_sends_what_is_in_hand() -> None:
    send = _GatedSend()
    batcher: LingerBatcher[str, int] = LingerBatcher(send, size=4, linger=600.0)
    in_flight = batcher.submit(["a", "b", "c", "d"])
    await _until(lambda: len(send.calls) == 1)
    queued = batcher.submit(["e"])  # in hand, lingering, when the crawl ends
    flushing = asyncio.ensure_future(batcher.flush())
    await _settle()
    assert not flushing.done()  # it waits for the send in flight, and the one it made
    send.open = True
    send.gates[0].set()
    await flushing
    assert send.calls == [["a", "b", "c", "d"], ["e"]]
    assert [f.result() for f in in_flight + queued] == [1, 1, 1, 1, 1]


async def _send_queued_goes_now() -> None:
    send = _GatedSend()
    send.open = True
    batcher: LingerBatcher[str, int] = LingerBatcher(send, size=10, linger=600.0)
    futures = batcher.submit(["x", "yy"])
    batcher.send_queued()
    assert [await f for f in futures] == [1, 2]
    later = batcher.submit(["zzz"])  # not draining: a later item lingers again
    await _settle()
    assert len(send.calls) == 1
    await batcher.flush()
    assert await later[0] == 3


@pytest.mark.parametrize("scenario", [
    _fills_across_callers, _bounded_in_flight, _lingers_then_goes, _quiet_while_busy_keeps_filling,
    _idle_sender_gets_items_at_once, _failures, _wrong_count_fails_the_batch, _flush_sends_what_is_in_hand,
    _send_queued_goes_now,
], ids=lambda scenario: scenario.__name__.strip("_"))
@pytest_twisted.inlineCallbacks
def test_linger_batcher(scenario):  # type: ignore[no-untyped-def]
    yield run_async(asyncio.wait_for(scenario(), 30))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"size": 0, "linger": 1.0}, "size must be >= 1"),
    ({"size": 1, "linger": 0.0}, "linger must be > 0"),
    ({"size": 1, "linger": 1.0, "max_in_flight": 0}, "max_in_flight must be >= 1"),
])
def test_bad_settings_are_refused(kwargs: dict, message: str) -> None:
    async def send(items: list[str]) -> list[int]:
        return []

    with pytest.raises(ValueError, match=message):
        LingerBatcher(send, **kwargs)
