"""The objects a crawl starts with are left out of the garbage collector's full passes while it runs.

By the time a crawl opens, its process holds some 150,000 objects that live as long as it does:
Scrapy, Twisted, the Cloudflare SDK's pydantic models, lxml, the pipelines and their tables. A
full collection of CPython's cyclic garbage collector walks every one of them, and a crawl's first
full collection (its pages, items and responses fill the youngest generations soon after it
starts) cost 80 ms of CPU on the reactor's thread here, which is most of a small site's "fetch"
CPU (bench/pipeline.py). None of those objects becomes garbage during the crawl.

So at spider_opened the extension calls `gc.freeze()`, the documented way to move every object the
collector tracks into a permanent generation that its passes skip, and at spider_closed
`gc.unfreeze()` gives them back to the oldest generation, so that a process running one crawl after
another (tests, bench/) does not keep the objects of each. Objects made during the crawl are
collected as before; a cycle of garbage that existed at spider_opened and was not yet collected is
freed once the crawl is over, not during it.

Enable: EXTENSIONS {"helppuff_crawl.extensions.heap.FrozenStartupHeap": -10}. Setting:
HELPPUFF_GC_FREEZE (on). Stat: helppuff/gc/frozen (the objects frozen at spider_opened).
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.exceptions import NotConfigured

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class FrozenStartupHeap:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats
        self.frozen = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.getbool("HELPPUFF_GC_FREEZE"):
            raise NotConfigured("HELPPUFF_GC_FREEZE is off")
        heap = cls(crawler)
        crawler.signals.connect(heap.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(heap.spider_closed, signal=signals.spider_closed)
        return heap

    def spider_opened(self, spider: Any) -> None:
        gc.freeze()
        self.frozen = True
        self.stats.set_value("helppuff/gc/frozen", gc.get_freeze_count())

    def spider_closed(self, spider: Any, reason: str) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
