"""The business facts in D1 `facts`, and the facts passage built from them.

Facts are stored one row per key (`facts.value` is JSON); a crawl writes the keys it found (source
"crawl") and never touches a key the owner set (source "owner"). The passage, one page of passages at
the contract's facts URL (helppuff://facts), is rebuilt from the stored rows, so the owner's values
win in it; "what's your number?" always has something to find.

During a crawl, `CrawlFacts` collects each page's facts; the home, contact and about pages' win over
the others' when they are merged.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.schema.contract import FACTS_TITLE, FACTS_URL
from helppuff_crawl.embed.models import EmbedFn
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.learn import Passages, learn
from helppuff_crawl.kb.writer import KnowledgeWriter
from helppuff_crawl.text.structured_data import Facts, Location, facts_passage, merge_facts, week_from_json

SITE_BLOCKS_KEY = "_site_blocks"  # furniture with contact details/hours, kept once with the facts
FACT_KEYS = ("name", "telephone", "email", "address", "hours", "areas", "price_range", "phones", "emails",
             "description", "locations")
_LABELS = {"hours": "Opening hours"}
FACTS_FIRST = ("home", "contact", "about")  # facts from these pages win over the others


def fact_values(facts: Facts) -> dict[str, Any]:
    """The non-empty facts worth storing, JSON-ready (hours as {day: [[opens, closes]]})."""
    data = facts.as_dict()
    return {key: data[key] for key in FACT_KEYS if data.get(key)}


def parse_owner_value(text: str) -> Any:
    """An owner's value: JSON when it parses as JSON (lists, hours tables), else the text itself."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, (list, dict)) else text


def passage(rows: Iterable[Mapping[str, Any]], site_blocks: Sequence[str] = (), site_name: str = "") -> str:
    """The facts passage from stored rows ({key, value (JSON)}), plus furniture blocks with contact details."""
    facts = Facts()
    extra: list[str] = []
    blocks = list(site_blocks)
    for row in rows:
        key = row["key"]
        value = json.loads(row["value"])
        if key == SITE_BLOCKS_KEY:
            if isinstance(value, list):
                blocks.extend(str(v) for v in value)
        elif key in ("phones", "emails", "areas") and isinstance(value, list):
            setattr(facts, key, [str(v) for v in value])
        elif key == "hours" and isinstance(value, dict):
            facts.hours = week_from_json(value)
        elif key == "locations" and isinstance(value, list) and all(isinstance(v, dict) for v in value):
            facts.locations = [Location.from_dict(v) for v in value if v.get("address")]
        elif key in ("name", "telephone", "email", "address", "price_range") and isinstance(value, str):
            setattr(facts, key, value)
        elif key != "description":
            label = _LABELS.get(key, key.replace("_", " ").capitalize())
            shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            extra.append(f"- {label}: {shown}")
    text = facts_passage(facts, site_name)
    if extra:
        text = (text or f"# {FACTS_TITLE}") + "\n\n" + "\n".join(extra)
    blocks = [block.strip() for block in blocks if block.strip()]
    if blocks:
        text = (text or f"# {FACTS_TITLE}") + "\n\n" + "\n\n".join(dict.fromkeys(blocks))
    return text


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


async def save_crawl_facts(kb: KnowledgeBase, site: str, values: Mapping[str, Any], source_url: str = "") -> None:
    """Write the crawl's facts; a key the owner set is never overwritten."""
    now = iso(utc_now())
    statements = [
        ("INSERT INTO facts (site, key, value, source, source_url, updated_at) VALUES (?, ?, ?, 'crawl', ?, ?) "
         "ON CONFLICT (site, key) DO UPDATE SET value = excluded.value, source_url = excluded.source_url, "
         "updated_at = excluded.updated_at WHERE facts.source = 'crawl'",
         [site, key, json.dumps(value, ensure_ascii=False), source_url, now])
        for key, value in values.items()
    ]
    if statements:
        await kb.batch(statements)


async def save_crawl(kb: KnowledgeBase, site: str, crawl: CrawlFacts, start_url: str) -> None:
    """Store what a crawl found: its merged facts, and the furniture blocks with contact details."""
    values = crawl.values()
    if values:
        await save_crawl_facts(kb, site, values, start_url)
    if crawl.site_blocks:
        await save_crawl_facts(kb, site, {SITE_BLOCKS_KEY: list(dict.fromkeys(crawl.site_blocks))})


async def set_owner_fact(kb: KnowledgeBase, site: str, key: str, value: Any) -> None:
    """Set a fact as the owner's: a crawl never overwrites it."""
    await kb.query(
        "INSERT INTO facts (site, key, value, source, source_url, updated_at) VALUES (?, ?, ?, 'owner', '', ?) "
        "ON CONFLICT (site, key) DO UPDATE SET value = excluded.value, source = 'owner', "
        "source_url = '', updated_at = excluded.updated_at",
        [site, key, json.dumps(value, ensure_ascii=False), iso(utc_now())],
    )


async def list_facts(kb: KnowledgeBase, site: str) -> list[dict[str, Any]]:
    """The site's fact rows: {key, value (JSON text), source, source_url, updated_at}, by key."""
    return await kb.query(
        "SELECT key, value, source, source_url, updated_at FROM facts WHERE site = ? ORDER BY key", [site])


async def write_facts_passage(kb: KnowledgeBase, writer: KnowledgeWriter, embed: EmbedFn, site: str) -> int:
    """Rebuild the site's facts passage from the stored facts (the owner's win); returns its chunks.

    One chunk with the business name, phone, email, address, hours and areas (and furniture that
    carried contact details), so "what's your number?" always has something to find.
    """
    markdown = passage(await list_facts(kb, site))
    return await learn(writer, embed, Passages(site, FACTS_URL, FACTS_TITLE, "contact", markdown), unless_stored=True)
