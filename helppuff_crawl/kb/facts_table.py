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
from helppuff_crawl.text.hours import DAYS, day_named, week_from_json

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


_OPENING = re.compile(r"(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})")
_TABLE_EXAMPLE = '{"Monday": [["07:00", "17:00"]]}'


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _opening(day: str, text: str) -> list[str]:
    match = _OPENING.fullmatch(text.strip())
    clocks = [f"{int(match[i]):02d}:{match[i + 1]}" for i in (1, 3)] if match else []
    if not clocks or not all(c == "24:00" or (int(c[:2]) < 24 and int(c[3:]) < 60) for c in clocks):
        raise ValueError(f"hours: {day}: {json.dumps(text.strip(), ensure_ascii=False)} is not an opening like 07:00-17:00")
    if clocks[0] == clocks[1]:
        raise ValueError(f"hours: {day}: {json.dumps(text.strip(), ensure_ascii=False)} opens and closes at the same time")
    return clocks


def owner_hours(text: str) -> dict[str, list[list[str]]]:
    """Opening hours as the owner types them: one day a line (or ";" between days), `Monday: 07:00-17:00`,
    openings separated by ",", `Closed` or nothing for a closed day; or the stored JSON table. The table
    saved (every day, in order); ValueError with a one-line reason. The dashboard reads them the same way
    (worker/src/owner-details.ts; cases in schema/owner_hours_cases.json)."""
    table: dict[str, list[list[str]]] = {day: [] for day in DAYS}
    named: set[str] = set()
    entries: list[tuple[str, list[str]]] = []
    kept = text.strip()
    if kept.startswith(("{", "[")):
        value = _json_or_none(kept)
        if not isinstance(value, dict):
            raise ValueError(f"hours: a table like {_TABLE_EXAMPLE}, or one day a line like Monday: 07:00-17:00")
        for name, spans in value.items():
            if not isinstance(spans, list) or not all(
                    isinstance(s, list) and len(s) == 2 and all(isinstance(t, str) for t in s) for s in spans):
                raise ValueError(f'hours: {name}: not a list of openings like [["07:00", "17:00"]]')
            entries.append((str(name), ["-".join(s) for s in spans]))
    else:
        for line in re.split(r"[\n;]", kept):
            if not line.strip():
                continue
            match = re.fullmatch(r"\s*([^\W\d_]+)\s*:?\s*(.*?)\s*", line, re.DOTALL)
            name, rest = (match[1], match[2]) if match else (line.strip(), "")
            entries.append((name, [] if rest.lower() in ("", "closed") else rest.split(",")))
    for name, openings in entries:
        day = day_named(name)
        if day is None:
            raise ValueError(f"hours: {json.dumps(name, ensure_ascii=False)} is not a day (Monday to Sunday)")
        if day in named:
            raise ValueError(f"hours: {day} is given twice")
        named.add(day)
        table[day] = [_opening(day, opening) for opening in openings]
    if not any(table.values()):
        raise ValueError("hours: no opening given; empty the field to take yours away")
    return table


MAX_AREA_CHARS = 100


def owner_areas(text: str) -> list[str]:
    """The service areas the owner types: one a line (or ";" between them), each once whatever its case;
    or a JSON list. ValueError with a one-line reason (worker/src/owner-details.ts ownerAreas reads them
    the same way; cases in schema/owner_areas_cases.json)."""
    kept = text.strip()
    if kept.startswith(("[", "{")):
        value = _json_or_none(kept)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError('areas: a list like ["Brunswick", "Coburg"], or one area a line')
        given: list[str] = value
    else:
        given = re.split(r"[\n;]", kept)
    areas: list[str] = []
    seen: set[str] = set()
    for area in (item.strip() for item in given):
        if not area:
            continue
        if len(area) > MAX_AREA_CHARS:
            raise ValueError(f"areas: at most {MAX_AREA_CHARS} characters an area, got {len(area)}")
        if area.lower() not in seen:
            seen.add(area.lower())
            areas.append(area)
    if not areas:
        raise ValueError("areas: no area given; empty the field to take yours away")
    return areas


# The owner's facts typed as lines, read into the value kept (the dashboard's TYPED_DETAILS).
OWNER_TYPED = {"hours": owner_hours, "areas": owner_areas}


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
