"""Learn the site's furniture from a sample of pages, then mark it for dropping on every page.

The spider fetches the sample first (the home page and the next ticked pages, at most
HELPPUFF_BOILERPLATE_SAMPLE) and marks each sample request with the sample's size; exactly one
item comes back per sample page, whatever its fate. Fetched pages wait here until the whole
sample is in; then `text/boilerplate.learn_furniture` finds the blocks on more than half of the
sample (identical HTML counted once), and every fetched page carries their fingerprints (`Page.drop_blocks`) to the extract
pipeline. Furniture that carries contact details or hours is kept once, with the site facts
(`Page.site_blocks` on the first sample page). Pages that were not fetched never wait.

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.boilerplate.BoilerplatePipeline": 150}.
Settings: HELPPUFF_BOILERPLATE_ENABLED (True), HELPPUFF_BOILERPLATE_THRESHOLD (0.5).
Stats: helppuff/boilerplate/{sample_pages,furniture_blocks,contact_blocks}.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import NotConfigured

from helppuff_crawl.items import Page
from helppuff_crawl.text.boilerplate import Furniture, learn_furniture

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BoilerplateConfig:
    threshold: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> BoilerplateConfig:
        threshold = settings.getfloat("HELPPUFF_BOILERPLATE_THRESHOLD")
        if not 0 < threshold < 1:
            raise ValueError(f"HELPPUFF_BOILERPLATE_THRESHOLD must be between 0 and 1, got {threshold}")
        return cls(threshold)


class BoilerplatePipeline:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HELPPUFF_BOILERPLATE_ENABLED"):
            raise NotConfigured("HELPPUFF_BOILERPLATE_ENABLED is off")
        self.config = BoilerplateConfig.from_settings(crawler.settings)
        self.crawler = crawler
        self.stats = crawler.stats
        self.furniture: Furniture | None = None
        self._sample: list[Page] = []
        self._learned = asyncio.Event()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        if self.furniture is None and item.sample:
            self._sample.append(item)
            if len(self._sample) >= item.sample:
                self._learn()
                # The pages that waited go first, in the order they came (the home page first): the
                # hash pipeline keeps the first of pages with the same content.
                await asyncio.sleep(0)
        if item.status != "fetched":
            return item
        if self.furniture is None:
            await self._learned.wait()
        assert self.furniture is not None
        item.drop_blocks = self.furniture.drop
        return item

    def _learn(self) -> None:
        # A page served under several URLs counts once: a single-page app's host answers each route
        # with the same index.html, and a sample of copies would make all of its content "furniture".
        distinct: dict[str, Page] = {}
        for page in self._sample:
            if page.status == "fetched" and page.html:
                distinct.setdefault(page.html, page)
        fetched = list(distinct.values())
        self.furniture = learn_furniture([page.html for page in fetched], self.config.threshold)
        if fetched and self.furniture.contact_blocks:
            fetched[0].site_blocks = self.furniture.contact_blocks
        self.stats.set_value("helppuff/boilerplate/sample_pages", len(fetched))
        self.stats.set_value("helppuff/boilerplate/furniture_blocks", len(self.furniture.drop))
        self.stats.set_value("helppuff/boilerplate/contact_blocks", len(self.furniture.contact_blocks))
        logger.info("Boilerplate: %d furniture blocks learned from %d sample pages (%d with contact details)",
                    len(self.furniture.drop), len(fetched), len(self.furniture.contact_blocks),
                    extra={"spider": self.crawler.spider})
        self._sample.clear()
        self._learned.set()
