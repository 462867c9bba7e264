"""Turn a fetched page's HTML into Markdown, title, description, FAQ pairs and facts.

A page whose URL said nothing of its category ("other") takes the one its title says ("Contact Us":
contact). When that changes its category, its tick is decided again, with the same rules and globs
as discovery (web/categories.decide_tick): a page titled "Privacy Policy" at /information is a legal
page and is recorded unticked, not learned; an include glob still forces the tick.

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.extract.ExtractMarkdownPipeline": 200}.
Settings: HELPPUFF_EXTRACT_ENABLED, HELPPUFF_INCLUDE, HELPPUFF_EXCLUDE. Stats: helppuff/extract/{pages,
empty,unticked_by_title}, helppuff/extract/method/<how the main content was chosen>, helppuff/facts/problems.
Pages that are not "fetched" (unticked, blocked, gone, ...) pass through untouched.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

from scrapy.exceptions import NotConfigured

from helppuff_crawl.items import Page
from helppuff_crawl.text.structured_data import extract_facts
from helppuff_crawl.text.markdown import extract
from helppuff_crawl.web.categories import DEFAULT_EXCLUDE, categorize, decide_tick

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ExtractConfig:
    include: tuple[str, ...]  # globs forcing a tick
    exclude: tuple[str, ...]  # globs unticking

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> ExtractConfig:
        exclude = settings.get("HELPPUFF_EXCLUDE")
        return cls(tuple(settings.getlist("HELPPUFF_INCLUDE")),
                   DEFAULT_EXCLUDE if exclude is None else tuple(settings.getlist("HELPPUFF_EXCLUDE")))


class ExtractMarkdownPipeline:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HELPPUFF_EXTRACT_ENABLED"):
            raise NotConfigured("HELPPUFF_EXTRACT_ENABLED is off")
        self.config = ExtractConfig.from_settings(crawler.settings)
        self.crawler = crawler
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_item(self, item: Page) -> Page:
        if not isinstance(item, Page) or item.status != "fetched":
            return item
        url = item.final_url or item.url
        extracted = extract(item.html, url, drop_blocks=item.drop_blocks)
        facts = extract_facts(item.html, url)
        item.title = extracted.title
        item.description = extracted.description or facts.description
        # FAQPage JSON-LD adds its pairs; those the page does not show become bold Q&A.
        unseen = [(q, a) for q, a in facts.faq if q and a and q not in extracted.markdown]
        item.markdown = "\n\n".join([extracted.markdown, *(f"**{q}**\n\n{a}" for q, a in unseen)]).strip()
        item.faq = list(extracted.faq) + [pair for pair in facts.faq if pair not in extracted.faq]
        item.facts = facts.as_dict()
        self.stats.inc_value("helppuff/extract/pages")
        self.stats.inc_value(f"helppuff/extract/method/{extracted.method}")
        if facts.problems:
            self.stats.inc_value("helppuff/facts/problems", len(facts.problems))
            logger.debug("Facts on %s: %s", url, "; ".join(facts.problems), extra={"spider": self.crawler.spider})
        if item.title and item.category == "other":
            # The URL said nothing; the title may (e.g. "Contact Us"), and the tick follows the category.
            item.category = categorize(item.url, item.title)
            if item.category != "other":
                self._decide_tick_again(item)
                if item.status != "fetched":
                    return item
        if not item.markdown.strip():
            item.status, item.reason = "empty", "no main content"
            self.stats.inc_value("helppuff/extract/empty")
        return item

    def _decide_tick_again(self, item: Page) -> None:
        decision = decide_tick(item.url, item.category, include=self.config.include, exclude=self.config.exclude)
        if decision.ticked:
            return
        item.ticked, item.tick_reason = False, decision.reason
        item.status, item.reason = "unticked", decision.reason
        self.stats.inc_value("helppuff/extract/unticked_by_title")
        logger.debug("Unticked %s: its title makes it %s (%s)", item.url, item.category, decision.reason,
                     extra={"spider": self.crawler.spider})
