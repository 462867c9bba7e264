"""The business facts in D1 `facts`, and the facts passage built from them.

Facts are stored one row per key (`facts.value` is JSON); a crawl writes the keys it found (source
"crawl", crawl_facts.py and facts_detect.py) and never touches a key the owner set (source "owner").
The passage, one page of passages at the contract's facts URL (helppuff://facts), is rebuilt from the
stored rows, so the owner's values win in it; "what's your number?" always has something to find.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from helppuff_crawl.clock import iso, utc_now
from helppuff_crawl.schema.contract import FACTS_TITLE, FACTS_URL
from helppuff_crawl.embed.models import EmbedFn
from helppuff_crawl.kb.database import KnowledgeBase
from helppuff_crawl.kb.learn import Passages, learn
from helppuff_crawl.kb.writer import KnowledgeWriter
from helppuff_crawl.text.business_facts import Facts, Location
from helppuff_crawl.text.facts_passage import facts_passage
from helppuff_crawl.text.hours import week_from_json

SITE_BLOCKS_KEY = "_site_blocks"  # furniture with contact details/hours, kept once with the facts
_LABELS = {"hours": "Opening hours"}


MAX_OWNER_VALUE_CHARS = 500
_OWNER_KEY = re.compile(r"[a-z][a-z0-9_]{0,39}")
_PHONE = re.compile(r"[0-9+()\-. ]+")
_EMAIL = re.compile(r"[^\s@<>\"]+@[^\s@<>\"]+\.[^\s@<>\"]+")


def check_owner_fact(key: str, value: str) -> str:
    """The value an owner's fact keeps (trimmed), or ValueError with the one-line reason. The rules the
    dashboard's Settings keeps too (worker/src/admin/settings.ts; cases in schema/owner_fact_cases.json)."""
    if not _OWNER_KEY.fullmatch(key):
        raise ValueError(f"key: a fact's name is lower-case letters, digits and _ (e.g. telephone, parking), got {key!r}")
    kept = value.strip()
    if not kept:
        raise ValueError(f"{key}: empty")
    if len(kept) > MAX_OWNER_VALUE_CHARS:
        raise ValueError(f"{key}: at most {MAX_OWNER_VALUE_CHARS} characters, got {len(kept)}")
    if key == "telephone" and not (_PHONE.fullmatch(kept) and 6 <= sum(c.isdigit() for c in kept) <= 15):
        raise ValueError(f"{key}: a phone number of 6 to 15 digits, got {kept!r}")
    if key == "email" and not _EMAIL.fullmatch(kept):
        raise ValueError(f"{key}: an email address, like hello@example.com, got {kept!r}")
    return kept


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
