"""The facts a crawl finds, page by page, merged and stored at its end.

During a crawl the store pipeline adds each page's facts (`CrawlFacts.add`, from the page item's
`facts`) and the furniture blocks that carried contact details; the home, contact and about pages'
facts win over the others' when they are merged (`FACTS_FIRST`). `save_crawl` writes the merged
facts worth storing to D1 `facts` (facts_table.py: never over the owner's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.facts_table import SITE_BLOCKS_KEY, save_crawl_facts
from helppuff_crawl.text.business_facts import Facts
from helppuff_crawl.text.facts_merge import merge_facts

FACT_KEYS = ("name", "telephone", "email", "address", "hours", "areas", "price_range", "phones", "emails",
             "description", "locations")
FACTS_FIRST = ("home", "contact", "about")  # facts from these pages win over the others


def fact_values(facts: Facts) -> dict[str, Any]:
    """The non-empty facts worth storing, JSON-ready (hours as {day: [[opens, closes]]})."""
    data = facts.as_dict()
    return {key: data[key] for key in FACT_KEYS if data.get(key)}


class CrawlFacts:
    """The facts a crawl found, page by page, and the furniture blocks that carried contact details."""

    def __init__(self) -> None:
        self._found: list[tuple[int, str, Facts]] = []
        self.site_blocks: list[str] = []

    def add(self, category: str, url: str, facts: Mapping[str, Any], site_blocks: Sequence[str] = ()) -> None:
        found = Facts.from_dict(facts)
        found.hours = {day: [tuple(span) for span in spans] for day, spans in found.hours.items()}
        rank = FACTS_FIRST.index(category) if category in FACTS_FIRST else len(FACTS_FIRST)
        self._found.append((rank, url, found))
        self.site_blocks.extend(site_blocks)

    def faq(self) -> list[tuple[str, str, str]]:
        """The FAQPage JSON-LD pairs read, as (page URL, question, answer), by URL (the self-check asks them)."""
        return [(url, q, a) for _, url, found in sorted(self._found, key=lambda entry: entry[1]) for q, a in found.faq]

    def values(self) -> dict[str, Any]:
        """The merged facts worth storing: home, contact and about pages first, then by URL."""
        ordered = [facts for _, _, facts in sorted(self._found, key=lambda entry: (entry[0], entry[1]))]
        return fact_values(merge_facts(ordered)) if ordered else {}


async def save_crawl(kb: KnowledgeBase, site: str, crawl: CrawlFacts, start_url: str) -> None:
    """Store what a crawl found: its merged facts, and the furniture blocks with contact details."""
    values = crawl.values()
    if values:
        await save_crawl_facts(kb, site, values, start_url)
    if crawl.site_blocks:
        await save_crawl_facts(kb, site, {SITE_BLOCKS_KEY: list(dict.fromkeys(crawl.site_blocks))})
