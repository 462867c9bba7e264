"""Split each learned page's Markdown into chunks along its heading tree (text/chunking).

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.chunk.ChunkPipeline": 600}.
Settings: HELPPUFF_CHUNK_ENABLED (True). Stats: helppuff/chunk/{pages,chunks,oversized}.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import NotConfigured

from helppuff_crawl.items import Page
from helppuff_crawl.text.chunking import ChunkMeta, chunk_page

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class ChunkPipeline:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HELPPUFF_CHUNK_ENABLED", True):
            raise NotConfigured("HELPPUFF_CHUNK_ENABLED is off")
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page) or item.status != "fetched":
            return item
        item.chunks = chunk_page(item.markdown, ChunkMeta(item.site, item.url, item.title, item.category))
        self.stats.inc_value("helppuff/chunk/pages")
        self.stats.inc_value("helppuff/chunk/chunks", len(item.chunks))
        oversized = sum(1 for chunk in item.chunks if chunk.oversized)
        if oversized:
            self.stats.inc_value("helppuff/chunk/oversized", oversized)
        return item
