"""Hash each learned page (title, category, Markdown) so unchanged pages are not redone.

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.hash.HashPipeline": 500}. Stats: helppuff/hash/pages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from helppuff_crawl.items import Page
from helppuff_crawl.text.hashing import content_hash

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class HashPipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_item(self, item: Page) -> Page:
        if isinstance(item, Page) and item.status == "fetched":
            item.content_hash = content_hash(item.title, item.category, item.markdown)
            self.stats.inc_value("helppuff/hash/pages")
        return item
