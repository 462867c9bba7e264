"""PageWriteQueue: page writes gathered across pages, sent together, each page told its own outcome.

The batching's concurrency (linger, one send at a time, flush) is tested once, in tests/test_batching.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import pytest_twisted

from helppuff_crawl.kb.write_queue import PageWriteQueue
from helppuff_crawl.kb.writer import PageWrite
from tests.conftest import run_async


class _RecordingWriter:
    """Stands in for KnowledgeWriter.write_pages: records each send; a send holding a URL in `bad` fails."""

    def __init__(self, bad: set[str] | None = None) -> None:
        self.sends: list[list[str]] = []
        self.bad = bad or set()

    async def write_pages(self, site: str, writes: list[PageWrite], known: Any = None) -> None:
        await asyncio.sleep(0)
        urls = [w.url for w in writes]
        self.sends.append(urls)
        if self.bad & set(urls):
            raise RuntimeError(f"D1 refused {sorted(self.bad & set(urls))}")


def _page(url: str) -> PageWrite:
    return PageWrite(url, None, {}, ("SELECT 1", []))


async def _full_batches() -> dict[str, Any]:
    writer = _RecordingWriter()
    queue = PageWriteQueue(writer, "acme", None, max_pages=3, linger=30.0)  # type: ignore[arg-type]
    await asyncio.gather(*(queue.write(_page(f"/p{i}")) for i in range(6)))  # never waits for the linger
    return {"sends": writer.sends, "count": queue.sends}


@pytest_twisted.inlineCallbacks
def test_pages_go_in_sends_of_max_pages(tmp_path):  # type: ignore[no-untyped-def]
    result = yield run_async(_full_batches())
    assert result["sends"] == [["/p0", "/p1", "/p2"], ["/p3", "/p4", "/p5"]] and result["count"] == 2


async def _one_bad_page() -> dict[str, Any]:
    writer = _RecordingWriter(bad={"/b"})
    queue = PageWriteQueue(writer, "acme", None, max_pages=3, linger=30.0)  # type: ignore[arg-type]
    outcomes = await asyncio.gather(*(queue.write(_page(u)) for u in ("/a", "/b", "/c")), return_exceptions=True)
    return {"outcomes": outcomes, "sends": writer.sends}


@pytest_twisted.inlineCallbacks
def test_a_bad_page_fails_alone_and_the_others_are_written(tmp_path):  # type: ignore[no-untyped-def]
    result = yield run_async(_one_bad_page())
    a, b, c = result["outcomes"]
    assert a is None and c is None
    assert isinstance(b, RuntimeError) and "/b" in str(b)
    assert result["sends"] == [["/a", "/b", "/c"], ["/a"], ["/b"], ["/c"]]  # together, then one by one


@pytest.mark.parametrize(("kwargs", "message"), [({"max_pages": 0, "linger": 1.0}, "max_pages"),
                                                  ({"max_pages": 1, "linger": 0}, "linger")])
def test_bad_sizes_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PageWriteQueue(_RecordingWriter(), "acme", None, **kwargs)  # type: ignore[arg-type]
