"""Site facts merged from the facts of several pages. Pure: no Scrapy import.

kb/crawl_facts.py gives the pages in the order whose facts win (home, contact and about pages first).
"""

from __future__ import annotations

from collections.abc import Sequence
from copy import deepcopy

from helppuff_crawl.text.business_facts import Facts, add_location


def merge_facts(facts: Sequence[Facts]) -> Facts:
    """Site facts: the first non-empty value of each field in the order given (home and contact
    pages first), the union of the lists, the hours of the first page that has any."""
    merged = Facts()
    for page in facts:
        for name in ("name", "telephone", "email", "address", "price_range", "description"):
            if not getattr(merged, name):
                setattr(merged, name, getattr(page, name))
        if not merged.hours and page.hours:
            merged.hours = {day: list(spans) for day, spans in page.hours.items()}
        for name in ("areas", "phones", "emails", "faq", "problems"):
            values = getattr(merged, name)
            values.extend(value for value in getattr(page, name) if value not in values)
    for page in facts:  # once the business's own address is known
        for location in page.locations:
            add_location(merged, deepcopy(location))
    return merged
