"""Turn a fetched page's HTML into Markdown, title, description, FAQ pairs and facts.

Enable: ITEM_PIPELINES {"helppuff_crawl.pipelines.extract.ExtractMarkdownPipeline": 200}.
Settings: HELPPUFF_EXTRACT_ENABLED (True). Stats: helppuff/extract/{pages,empty},
helppuff/extract/method/<how the main content was chosen>, helppuff/facts/problems.
Pages that are not "fetched" (unticked, blocked, gone, ...) pass through untouched.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Self

from scrapy.exceptions import NotConfigured

from helppuff_crawl.items import Page
from helppuff_crawl.text.facts import extract_facts
from helppuff_crawl.text.markdown import extract
from helppuff_crawl.web.categories import categorize

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class ExtractMarkdownPipeline:
    def __init__(self, crawler: Crawler) -> None:
        if not crawler.settings.getbool("HELPPUFF_EXTRACT_ENABLED", True):
            raise NotConfigured("HELPPUFF_EXTRACT_ENABLED is off")
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
        if item.title and item.category == "other":
            # The URL said nothing; the title may (e.g. "Contact Us").
            item.category = categorize(item.url, item.title)
        self.stats.inc_value("helppuff/extract/pages")
        self.stats.inc_value(f"helppuff/extract/method/{extracted.method}")
        if facts.problems:
            self.stats.inc_value("helppuff/facts/problems", len(facts.problems))
            logger.debug("Facts on %s: %s", url, "; ".join(facts.problems), extra={"spider": self.crawler.spider})
        if not item.markdown.strip():
            item.status, item.reason = "empty", "no main content"
            self.stats.inc_value("helppuff/extract/empty")
        return item
