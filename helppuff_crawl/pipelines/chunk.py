"""Split each learned page's Markdown into chunks along its heading tree (text/chunking).

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.chunk.ChunkPipeline": 600}.
Settings: HELPPUFF_CHUNK_ENABLED, HELPPUFF_CHUNK_MIN_TOKENS, HELPPUFF_CHUNK_MAX_TOKENS.
Stats: helppuff/chunk/{pages,chunks,oversized}.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import NotConfigured

from helppuff_crawl.items import Page
from helppuff_crawl.text.chunking import ChunkMeta, ChunkSizes, chunk_page

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings


@dataclass(frozen=True)
class ChunkConfig:
    sizes: ChunkSizes

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ChunkConfig:
        return cls(ChunkSizes.from_settings(settings))


class ChunkPipeline:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HELPPUFF_CHUNK_ENABLED"):
            raise NotConfigured("HELPPUFF_CHUNK_ENABLED is off")
        self.config = ChunkConfig.from_settings(crawler.settings)
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page) or item.status != "fetched":
            return item
        meta = ChunkMeta(item.site, item.url, item.title, item.category)
        item.chunks = chunk_page(item.markdown, meta, self.config.sizes)
        self.stats.inc_value("helppuff/chunk/pages")
        self.stats.inc_value("helppuff/chunk/chunks", len(item.chunks))
        oversized = sum(1 for chunk in item.chunks if chunk.oversized)
        if oversized:
            self.stats.inc_value("helppuff/chunk/oversized", oversized)
        return item
