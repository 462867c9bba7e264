"""Learn the site's furniture from a sample of pages, then mark it for dropping on every page.

The spider fetches the sample first (the home page and the next ticked pages, at most
HELPPUFF_BOILERPLATE_SAMPLE) and marks each sample request with the sample's size; exactly one
item comes back per sample page, whatever its fate. Fetched pages wait here until the whole
sample is in; then `text/boilerplate.learn_furniture` finds the blocks on more than half of the
sample (identical HTML counted once), and every fetched page carries their fingerprints (`Page.drop_blocks`) to the extract
pipeline. Furniture that carries contact details or hours is kept once, with the site facts
(`Page.site_blocks` on the first sample page). Pages that were not fetched never wait.

A full crawl stores the furniture it learned (kb/furniture.py, D1 `site_furniture`), because a
targeted crawl (CrawlRun.start.targeted: a few pages named) is no sample: it drops the stored
furniture from its pages (CrawlRun.start.furniture, read at the crawl's start, kb/crawl_start.py).
With none stored (an older data folder), the spider makes the pages named its sample, with the home
page when it is not named; that home page is fetched for the sample only and dropped here (DropItem)
once the furniture is learned, whatever its fate, so its row is left as it is. What a targeted crawl
learns so is not stored: a few named pages are a weaker sample than a full crawl's.

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.boilerplate.BoilerplatePipeline": 150}, with the
CrawlRun extension for storing and reading the furniture, read from its start at the first page
(without it nothing is stored, and every crawl learns from its sample).
Settings: HELPPUFF_BOILERPLATE_ENABLED (True), HELPPUFF_BOILERPLATE_THRESHOLD (0.5).
Stats: helppuff/boilerplate/{sample_pages,furniture_blocks,contact_blocks,stored,save_error},
helppuff/targeted/furniture ("stored" or "learned": where a targeted crawl's furniture came from).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from scrapy.exceptions import DropItem, NotConfigured

from helppuff_crawl.cloudflare.client import CloudflareError
from helppuff_crawl.extensions.run import CrawlRun
from helppuff_crawl.items import Page
from helppuff_crawl.kb.furniture import save_furniture
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
    def __init__(self, crawler: Crawler, run: CrawlRun | None = None) -> None:
        if not crawler.settings.getbool("HELPPUFF_BOILERPLATE_ENABLED"):
            raise NotConfigured("HELPPUFF_BOILERPLATE_ENABLED is off")
        self.config = BoilerplateConfig.from_settings(crawler.settings)
        self.crawler = crawler
        self.stats = crawler.stats
        self.run = run  # the knowledge base the furniture is stored in; its start: targeted or not, furniture stored
        self.home = crawler.settings.get("HELPPUFF_START_URL") or ""
        self.furniture: Furniture | None = None
        self._sample: list[Page] = []
        self._learned = asyncio.Event()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, crawler.get_extension(CrawlRun))

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        start = self.run.start if self.run is not None else None
        if self.furniture is None and start is not None and start.targeted and start.furniture is not None:
            self.furniture = start.furniture
            self.stats.set_value("helppuff/targeted/furniture", "stored")
            self.stats.set_value("helppuff/boilerplate/furniture_blocks", len(self.furniture.drop))
            self._learned.set()
        if self.furniture is None and item.sample:
            self._sample.append(item)
            if len(self._sample) >= item.sample:
                self._learn()
                await self._store()
                # The pages that waited go first, in the order they came (the home page first): the
                # hash pipeline keeps the first of pages with the same content.
                await asyncio.sleep(0)
        if start is not None and start.targeted and item.url == self.home and self.home not in start.targeted:
            # The home page of a targeted crawl that did not name it: fetched for the sample only.
            raise DropItem(f"{item.url}: fetched as a boilerplate sample page only", log_level="DEBUG")
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

    async def _store(self) -> None:
        """A full crawl stores what it learned, for targeted crawls (kb/furniture.py)."""
        assert self.furniture is not None
        if self.run is None:
            return
        pages = int(self.stats.get_value("helppuff/boilerplate/sample_pages", 0))
        if self.run.start.targeted:
            self.stats.set_value("helppuff/targeted/furniture", "learned")
            return
        try:
            stored = await save_furniture(self.run.kb, self.run.config.site, self.furniture, pages, self.run.run_id)
        except (CloudflareError, ValueError) as exc:
            # The crawl goes on: targeted crawls learn from their own pages until furniture is stored.
            logger.warning("The furniture of %s was not stored: %s", self.run.config.site, exc,
                           extra={"spider": self.crawler.spider})
            self.stats.set_value("helppuff/boilerplate/save_error", f"{type(exc).__name__}: {exc}"[:300])
            return
        self.stats.set_value("helppuff/boilerplate/stored", stored)
        if not stored:
            logger.info("Furniture of %s from %d sample pages: the furniture stored from a larger sample is kept",
                        self.run.config.site, pages, extra={"spider": self.crawler.spider})
