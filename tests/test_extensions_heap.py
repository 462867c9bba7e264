"""The startup heap frozen while a crawl runs (extensions/heap.py), on a real crawl of a fixture site:
the process's objects are frozen from spider_opened to spider_closed and given back after, garbage
made during the crawl is still collected, and with HELPPUFF_GC_FREEZE off nothing is frozen."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest_twisted
from scrapy import signals

from tests.conftest import make_crawler, project_settings


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def _watch(crawler: Any) -> dict[str, Any]:
    """At the first page scraped: the freeze count, and whether a cycle made then is collected then."""
    seen: dict[str, Any] = {}

    def scraped(item: Any, response: Any, spider: Any) -> None:
        if "frozen" in seen:
            return
        seen["frozen"] = gc.get_freeze_count()
        cycle = _Cycle()
        ref = weakref.ref(cycle)
        del cycle
        gc.collect()
        seen["cycle_collected"] = ref() is None

    crawler.signals.connect(scraped, signal=signals.item_scraped, weak=False)
    return seen


@pytest_twisted.inlineCallbacks
def test_the_startup_heap_is_frozen_while_the_crawl_runs(serve_site, tmp_path: Path):  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    before = gc.get_freeze_count()
    crawler = make_crawler(project_settings(tmp_path, HELPPUFF_RENDER_JS="never"))
    seen = _watch(crawler)
    yield crawler.crawl(url=server.url, site="acme")
    stats = crawler.stats.get_stats()

    assert stats["helppuff/store/status/ok"] > 0
    assert seen["frozen"] > before and stats["helppuff/gc/frozen"] > before, (seen, stats.get("helppuff/gc/frozen"))
    assert seen["cycle_collected"], "garbage made during the crawl must still be collected"
    assert gc.get_freeze_count() == before, "the objects are given back to the collector when the crawl closes"


@pytest_twisted.inlineCallbacks
def test_off_nothing_is_frozen(serve_site, tmp_path: Path):  # type: ignore[no-untyped-def]
    server = serve_site("acme-plumbing")
    before = gc.get_freeze_count()
    crawler = make_crawler(project_settings(tmp_path, HELPPUFF_RENDER_JS="never", HELPPUFF_GC_FREEZE=False))
    seen = _watch(crawler)
    yield crawler.crawl(url=server.url, site="acme")
    stats = crawler.stats.get_stats()

    assert stats["helppuff/store/status/ok"] > 0
    assert seen["frozen"] == before and "helppuff/gc/frozen" not in stats
    assert seen["cycle_collected"]
